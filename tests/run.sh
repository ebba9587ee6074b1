#!/usr/bin/env bash
# Runs every suite (host unit, BPF program, end-to-end, and the stage that
# runs in Debian's stock kernel under QEMU) and adds their summary lines
# into one. Each suite prints "N passed, N failed" last.
set -u
cd "$(dirname "$0")/.."
B=${BUILD:-build}
. tests/suites.bash

vm_stage() { tests/vm/run --timeout 900 -- tests/vm/stage.sh; }
# The longest suites, CPU-bound kill loops and fuzzing with no timing
# judged, in two lanes of about equal length that share the two cores.
kill_and_fuzz() { together tests/e2e/upgrade.sh "tests/e2e/fuzz.sh tests/e2e/crash.sh"; }

suites=("$B/tests/test_bucket" "$B/tests/test_charge" "$B/tests/test_parse" "$B/tests/test_units" "$B/tests/test_heap"
	"$B/tests/test_table" "$B/tests/test_prog")
for t in tests/e2e/*.sh; do
	case ${t##*/} in upgrade.sh | fuzz.sh | crash.sh) continue ;; esac
	[[ -e $t ]] && suites+=("$t")
done
suites+=(kill_and_fuzz vm_stage)
run_suites "${suites[@]}"
