#!/usr/bin/env bash
# Runs every suite (host unit, BPF program, end-to-end, and the stage that
# runs in Debian's stock kernel under QEMU) and adds their summary lines
# into one, the slowest five suites listed before it. Each suite prints
# "N passed, N failed" last and runs under a time limit (SUITE_LIMITS).
# The kill loops and the fuzzing try a sample drawn from TB_SEED, printed
# first (TB_SEED=N make test repeats a run); TB_FULL=1 (make test-full)
# tries every kill point and every fuzz case.
set -u
cd "$(dirname "$0")/.."
B=${BUILD:-build}
. tests/suites.bash

: "${TB_SEED:=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
: "${TB_FULL:=0}"
export TB_SEED TB_FULL
echo "seed $TB_SEED (TB_SEED=$TB_SEED make test repeats this run)$( ((TB_FULL)) && echo '; every kill point and fuzz case')"
TB_SLOWEST=5

# Seconds, about three times a suite's usual time on a 2-core machine;
# a second figure is the limit under TB_FULL=1.
declare -A SUITE_LIMITS=(
	[$B/tests/test_prog]=30
	[tests/e2e/bench_smoke.sh]=240
	[tests/e2e/lifecycle.sh]=100
	[tests/e2e/metrics.sh]=80
	[tests/e2e/observe.sh]=80
	[tests/e2e/policing.sh]=80
	[tests/e2e/groups.sh]=80
	[tests/e2e/totals.sh]=60
	[tests/e2e/fleet.sh]=90
	[tests/e2e/package.sh]=90
	[tests/e2e/matches.sh]=80
	[tests/e2e/fragments.sh]=45
	[tests/e2e/resets.sh]=45
	[tests/e2e/spoof.sh]=45
	[tests/e2e/tcp.sh]=45
	[tests/e2e/top.sh]=45
	[tests/e2e/shared_monitor.sh]=40
	[tests/e2e/tcx.sh]=60
	[tests/e2e/xdp_share.sh]=40
	[tests/e2e/syn_icmp.sh]=45
	[tests/e2e/remark.sh]=30
	[tests/e2e/bans.sh]="45 90"
	[tests/e2e/errors.sh]=60
	[tests/e2e/exporter.sh]=180
	[tests/e2e/exporter_crowd.sh]="80 150"
	[tests/e2e/privilege.sh]=40
	[tests/e2e/vm_runner.sh]=60
	[tests/e2e/upgrade.sh]="300 900"
	[tests/e2e/fuzz.sh]="600 1800"
	[tests/e2e/crash.sh]="120 900"
)
DEFAULT_LIMIT=30
VM_LIMIT=1500

# The VM draws from the same seed. The emulator runs on what CPU the host
# suites beside it leave (nice), so that theirs is not taken from them.
vm_stage() {
	nice -n 10 tests/vm/run --timeout "$VM_LIMIT" -- env TB_SEED="$TB_SEED" TB_FULL="$TB_FULL" tests/vm/stage.sh
}
# The arm64 build in Debian's arm64 kernel (tests/vm/arm64.sh).
vm_arm64_stage() {
	nice -n 10 tests/vm/run --arch arm64 --timeout "$VM_LIMIT" -- \
		env TB_SEED="$TB_SEED" TB_FULL="$TB_FULL" BUILD="$B" tests/vm/arm64.sh
}
host=()
for t in tests/e2e/*.sh; do
	case ${t##*/} in upgrade.sh | fuzz.sh | crash.sh | bench_smoke.sh | package.sh | vm_runner.sh | errors.sh | bans.sh) continue ;; esac
	[[ -e $t ]] && host+=("$t")
done
# Two lanes share the two cores, in two stages. First the unit and
# program tests and the host's namespace suites, which judge rates, one
# at a time, beside the VM stage and the test of the VM's runner. Then
# the suites that judge no timing: the package's build, the benchmark's
# smoke run (its numbers are not judged) and the error paths beside the
# upgrade's kill loops, the fuzz run, the crash runs, the package's
# checks (its build elsewhere), the bans (upper bounds and a ban's end by
# the clock only: the load beside them moves neither) and the layering. The upgrade's older builds are made from
# the start, taking only the CPU that the suites leave.
units=("$B/tests/test_bucket" "$B/tests/test_charge" "$B/tests/test_parse" "$B/tests/test_units"
	"$B/tests/test_heap" "$B/tests/test_table" "$B/tests/test_place" "$B/tests/test_group" "$B/tests/test_match"
	"$B/tests/test_fleet" "$B/tests/test_hold" "$B/tests/test_devkey" "$B/tests/test_event" "$B/tests/test_ban" "$B/tests/test_store"
	"$B/tests/test_prog")
beside_vm() { together "${units[*]} ${host[*]}" "vm_stage vm_arm64_stage tests/e2e/vm_runner.sh"; }
# make deb and make deb-arm64 (make test-full builds them first), under
# one hold of the lock that tests/e2e/package.sh waits on.
deb_build() {
	local t passed=0 failed=0
	exec 9>"$B/deb.lock"
	flock 9
	for t in deb deb-arm64; do
		if make -s BUILD="$B" "$t" >/dev/null; then
			echo "ok   make $t"
			passed=$((passed + 1))
		else
			echo "FAIL make $t"
			failed=$((failed + 1))
		fi
	done
	exec 9>&-
	echo "$passed passed, $failed failed"
	((failed == 0))
}
deb_lane=deb_build
[[ $TB_FULL == 1 ]] && deb_lane=
no_timing() {
	together "$deb_lane tests/e2e/bench_smoke.sh tests/e2e/errors.sh" \
		"tests/e2e/upgrade.sh tests/e2e/fuzz.sh tests/e2e/crash.sh tests/e2e/package.sh tests/e2e/bans.sh tests/layering.sh"
}

export TB_OLDER_DIR=$B/older
nice -n 19 tests/older.sh "$TB_OLDER_DIR" &
builder=$!
trap 'kill "$builder" 2>/dev/null' EXIT
run_suites beside_vm no_timing
