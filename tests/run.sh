#!/usr/bin/env bash
# Runs every suite (host unit, BPF program, end-to-end, and the stage that
# runs in Debian's stock kernel under QEMU) and adds their summary lines
# into one. Each suite prints "N passed, N failed" last.
set -u
cd "$(dirname "$0")/.."
B=${BUILD:-build}

suites=("$B/tests/test_bucket" "$B/tests/test_charge" "$B/tests/test_parse" "$B/tests/test_units" "$B/tests/test_prog")
for t in tests/e2e/*.sh; do
	[[ -e $t ]] && suites+=("$t")
done
suites+=(vm_stage)
vm_stage() { tests/vm/run --timeout 900 -- tests/vm/stage.sh; }

passed=0
failed=0
for s in "${suites[@]}"; do
	echo "== $s"
	log=$(mktemp)
	"$s" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	rm -f "$log"
	if [[ -z $summary ]]; then
		echo "FAIL $s: exited $rc without a summary line"
		failed=$((failed + 1))
		continue
	fi
	read -r p _ f _ <<<"$summary"
	passed=$((passed + p))
	failed=$((failed + f))
	if ((rc != 0 && f == 0)); then
		echo "FAIL $s: exited $rc"
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
((failed == 0))
