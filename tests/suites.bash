# run_suites SUITE...: runs each suite (a command that prints "N passed,
# N failed" last), shows its output, and prints the sum of their summary
# lines as one. A suite that exits non-zero without a failure, or prints
# no summary, counts as one failure. Each suite's time is shown after it,
# so the slow ones are plain in any log; with TB_SLOWEST=N, the N slowest
# (a function's inner suites named after it) are listed before the sum.
# A command runs under its time limit (suite_limit): past it, it and
# everything it started are stopped, and it fails by name with its last
# output. A SUITE that is a function of the caller's (a group of lanes,
# the VM stage) runs as it is: the suites it runs have limits of their
# own. Returns 1 when anything failed.
run_suites() {
	local s log rc summary p f t0 limit passed=0 failed=0 times
	times=$(mktemp)
	for s in "$@"; do
		echo "== $s"
		log=$(mktemp)
		t0=$SECONDS
		if declare -F "$s" >/dev/null; then
			"$s" </dev/null 2>&1 | tee "$log"
			rc=${PIPESTATUS[0]}
		else
			limit=$(suite_limit "$s")
			# timeout stops the suite's whole process group: its
			# senders, servers and VM too; its traps still clean up.
			# shellcheck disable=SC2086 # a suite may carry arguments
			timeout -k 10 "$limit" $s </dev/null 2>&1 | tee "$log"
			rc=${PIPESTATUS[0]}
		fi
		echo "== $s: $((SECONDS - t0)) s"
		if declare -F "$s" >/dev/null; then
			# The suites it ran, not the groups of them.
			tr -d '\r' <"$log" | sed -nE 's|^== (.*): ([0-9]+) s$|\2 \1|p' | while read -r t name; do
				declare -F "$name" >/dev/null || echo "$t $s: $name"
			done >>"$times"
		else
			echo "$((SECONDS - t0)) $s" >>"$times"
			if ((rc == 124 || rc == 137)); then
				echo "FAIL $s: ran past its time limit of $limit s; its last output:"
				tail -n 15 "$log" | sed 's/^/    /'
				failed=$((failed + 1))
				rm -f "$log"
				continue
			fi
		fi
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
	if [[ -n ${TB_SLOWEST:-} && -s $times ]]; then
		echo "slowest suites:"
		sort -rn "$times" | head -n "$TB_SLOWEST" | while read -r t name; do printf '  %4d s  %s\n' "$t" "$name"; done
	fi
	rm -f "$times"
	echo "$passed passed, $failed failed"
	((failed == 0))
}

# suite_limit SUITE: its time limit in seconds, about three times its
# usual time, from the caller's SUITE_LIMITS (name: "limit full-limit",
# the second under TB_FULL=1, which runs every kill point and fuzz case);
# a suite the table lacks gets DEFAULT_LIMIT.
suite_limit() {
	local l
	read -ra l <<<"${SUITE_LIMITS[${1%% *}]:-${DEFAULT_LIMIT:-60}}"
	if [[ ${TB_FULL:-0} == 1 ]]; then echo "${l[1]:-${l[0]}}"; else echo "${l[0]}"; fi
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
		TB_SLOWEST= run_suites $lane >"${logs[-1]}" 2>&1 &
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
