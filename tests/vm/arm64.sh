#!/usr/bin/env bash
# The arm64 suites, run inside Debian 12's own arm64 kernel by tests/run.sh
# through tests/vm/run --arch arm64, on the arm64 build (make arm64):
# tbctl's programs load there with their fences, pass 6.1's verifier and
# police exactly. make test runs a smoke: the host unit tests (the pure
# logic, with real arm64 fences), the program tests of the memory order
# and of a burst then drops, and the policing suite through native XDP.
# Under TB_FULL=1 (make test-full): every program test, with the host's
# number of race runs, and the policing suite in every receive mode.
# Prints one summary line.
set -u
cd "$(dirname "$0")/../.."
A=$PWD/${BUILD:-build}/arm64
. tests/suites.bash
declare -A SUITE_LIMITS=(
	["$A/tests/test_prog"]="120 900"
	[tests/e2e/policing.sh]="150 400"
)
DEFAULT_LIMIT=60
units=()
for t in bucket charge parse units heap table place group match fleet hold devkey event ban; do
	units+=("$A/tests/test_$t")
done
export BUILD=$A
if [[ ${TB_FULL:-0} == 1 ]]; then
	export TB_RACE_RUNS=1000000
	run_suites "${units[@]}" "$A/tests/test_prog" tests/e2e/policing.sh
else
	export TB_POLICING_MODES=xdp
	run_suites "${units[@]}" "$A/tests/test_prog order probes burst_then_drop" tests/e2e/policing.sh
fi
