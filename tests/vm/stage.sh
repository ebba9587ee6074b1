#!/usr/bin/env bash
# The suites that need Debian's stock kernel, run inside it by
# tests/run.sh through tests/vm/run: the BPF program tests (the verifier of
# the kernel users run), and the namespace tests that need fq or netem,
# which this machine's kernel lacks. Prints one summary line.
set -u
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
passed=0
failed=0
for s in "$B/tests/test_prog" tests/vm/e2e/*.sh; do
	echo "== vm: $s"
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
	((rc != 0 && f == 0)) && { echo "FAIL $s: exited $rc"; failed=$((failed + 1)); }
done
echo "$passed passed, $failed failed"
((failed == 0))
