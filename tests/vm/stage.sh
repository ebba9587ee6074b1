#!/usr/bin/env bash
# The suites that need Debian's stock kernel, run inside it by
# tests/run.sh through tests/vm/run: the BPF program tests (the verifier of
# the kernel users run), and the namespace tests that need fq or netem,
# which this machine's kernel lacks. Prints one summary line.
set -u
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
. tests/suites.bash
run_suites "$B/tests/test_prog" tests/vm/e2e/*.sh
