#!/usr/bin/env bash
# The suites that need Debian's stock kernel, run inside it by
# tests/run.sh through tests/vm/run: the BPF program tests (the verifier of
# the kernel users run), and the namespace tests that need fq or netem,
# which this machine's kernel lacks. Prints one summary line. Emulated,
# everything runs several times slower than on the host: the limits are
# about three times the usual times in the emulator.
set -u
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
. tests/suites.bash
declare -A SUITE_LIMITS=(
	[$B/tests/test_prog]=270
	[tests/vm/e2e/shape.sh]=170
	[tests/vm/e2e/tcp_rtt.sh]=240
	[tests/vm/e2e/upgrade.sh]=170
	[tests/vm/e2e/package.sh]=120
	[tests/vm/e2e/fleet.sh]=150
)
DEFAULT_LIMIT=60
run_suites "$B/tests/test_prog" tests/vm/e2e/*.sh
