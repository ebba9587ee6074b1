# run_suites SUITE...: runs each suite (a command that prints "N passed,
# N failed" last), shows its output, and prints the sum of their summary
# lines as one. A suite that exits non-zero without a failure, or prints
# no summary, counts as one failure. Each suite's time is shown after it,
# so the slow ones are plain in any log. Returns 1 when anything failed.
run_suites() {
	local s log rc summary p f t0 passed=0 failed=0
	for s in "$@"; do
		echo "== $s"
		log=$(mktemp)
		t0=$SECONDS
		"$s" 2>&1 | tee "$log"
		rc=${PIPESTATUS[0]}
		echo "== $s: $((SECONDS - t0)) s"
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
}

# together LANE...: runs the lanes at once, each a space-separated list of
# suites that run_suites runs in turn, then shows each lane's output whole
# and prints one summary line for all. For suites that keep a CPU busy and
# judge no timing (kill loops, fuzzing), so that two of them share the
# machine's cores rather than take turns.
together() {
	local lane logs=() pids=() i passed=0 failed=0
	for lane in "$@"; do
		logs+=("$(mktemp)")
		# shellcheck disable=SC2086 # a lane is a list of suites
		run_suites $lane >"${logs[-1]}" 2>&1 &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[i]}"
		if [[ $(tail -n 1 "${logs[i]}") =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
			head -n -1 "${logs[i]}"
			passed=$((passed + BASH_REMATCH[1]))
			failed=$((failed + BASH_REMATCH[2]))
		else
			cat "${logs[i]}"
			echo "FAIL lane $((i + 1)) (${*:i+1:1}): ended without a summary line"
			failed=$((failed + 1))
		fi
		rm -f "${logs[i]}"
	done
	echo "$passed passed, $failed failed"
	((failed == 0))
}
