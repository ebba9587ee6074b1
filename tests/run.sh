#!/usr/bin/env bash
# Runs every suite (host unit, BPF program, end-to-end, and the stage that
# runs in Debian's stock kernel under QEMU) and adds their summary lines
# into one. Each suite prints "N passed, N failed" last.
set -u
cd "$(dirname "$0")/.."
B=${BUILD:-build}
. tests/suites.bash

vm_stage() { tests/vm/run --timeout 900 -- tests/vm/stage.sh; }

suites=("$B/tests/test_bucket" "$B/tests/test_charge" "$B/tests/test_parse" "$B/tests/test_units" "$B/tests/test_heap"
	"$B/tests/test_prog")
for t in tests/e2e/*.sh; do
	[[ -e $t ]] && suites+=("$t")
done
suites+=(vm_stage)
run_suites "${suites[@]}"
