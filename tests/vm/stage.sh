#!/usr/bin/env bash
# The suites that need Debian's stock kernel, run inside it by
# tests/run.sh through tests/vm/run: the BPF program tests (the verifier of
# the kernel users run), and the namespace tests that need fq or netem,
# which this machine's kernel lacks. Prints one summary line. Emulated,
# everything runs several times slower than on the host, and twice as
# slow again on a slower host: the limits are about twice the times seen
# on the slowest. The upgrade, package and fleet suites prove on Debian's
# kernel what the host's own suites of those names prove here (the
# upgrade's programs pass 6.1's verifier in the program tests): they run
# under TB_FULL=1 (make test-full, before a release), the fleet suite
# last, as its agents judge time.
set -u
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
. tests/suites.bash
declare -A SUITE_LIMITS=(
	[$B/tests/test_prog]=400
	[tests/vm/e2e/shape.sh]=170
	[tests/vm/e2e/tcp_rtt.sh]=300
	[tests/vm/e2e/xdp_dispatcher.sh]=240
	[tests/vm/e2e/upgrade.sh]=170
	[tests/vm/e2e/package.sh]=240
	[tests/vm/e2e/fleet.sh]=450
)
DEFAULT_LIMIT=60
suites=()
for t in tests/vm/e2e/*.sh; do
	case ${t##*/} in upgrade.sh | package.sh | fleet.sh) ;; *) suites+=("$t") ;; esac
done
[[ ${TB_FULL:-0} == 1 ]] && suites+=(tests/vm/e2e/upgrade.sh tests/vm/e2e/package.sh tests/vm/e2e/fleet.sh)
# The program tests' races, a quarter of the host's (make test-full: as
# many): emulated, a million runs a CPU take a minute.
[[ ${TB_FULL:-0} == 1 ]] || export TB_RACE_RUNS=250000
run_suites "$B/tests/test_prog" "${suites[@]}"
