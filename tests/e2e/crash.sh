#!/usr/bin/env bash
# tbctl killed at bpf() calls of a rule change (strace's fault
# injection): every kill leaves the old rule or the new one, as rule list
# shows it, and the next change repairs what the kill left half-done (a
# prefix in two slots), keeping the rule that was shown. Then attach,
# killed at its bpf() calls: status says what it finds, and the next
# attach or detach recovers with no manual step. And reset counters,
# killed at its bpf() calls: every count is as it was, or all are zero.
# Each operation is killed at one call of every phase (kill_points: the
# calls between two that change state, and those before and after its
# hook), drawn from TB_SEED; under TB_FULL=1 at every one.
. "$(dirname "$0")/lib.bash"
setup

P=198.18.64.0/24
OLD=500000      # 4mbit in bytes/s
NEW=1000000     # 8mbit
run_r() { nsenter --net=/var/run/netns/"$NS_R" "$@"; }
# listed: the rates rule list shows for P, comma-separated.
listed() { tb -j rule list dev "$DEV_R" | jq -r --arg p "$P" '[.[] | select(.prefix == $p) | .rate_bytes_per_sec | tostring] | join(",")'; }
# slots: the rates of the slots in use for P, as the map holds them.
slots() { run_r "$B/tbbench" slots --dev "$DEV_R" | awk -v p="$P" '$2 == p { print $3 }' | sort | paste -sd, -; }

check "attach" tb attach dev "$DEV_R"
check "default rule" tb rule set dev "$DEV_R" default rate 1mbit
tb rule set dev "$DEV_R" $P rate 4mbit
for change in set del; do
	tb rule set dev "$DEV_R" $P rate 4mbit
	if [[ $change == set ]]; then
		run_r strace -f -qq -e trace=bpf -o "$tmp/trace" "$TBCTL" rule set dev "$DEV_R" $P rate 8mbit
	else
		run_r strace -f -qq -e trace=bpf -o "$tmp/trace" "$TBCTL" rule del dev "$DEV_R" $P
	fi
	kill_points --every "$tmp/trace" >"$tmp/points"
	kills=$(sample "rule $change" 1 <"$tmp/points" | xargs)
	calls=$(grep -c '^[0-9]* *bpf(' "$tmp/trace")
	check "rule $change makes $calls bpf() calls, $(cut -d' ' -f1 "$tmp/points" | uniq | wc -l) phases between its writes" \
		[ "$calls" -gt 5 ]
	bad=0 seen=""
	for k in $kills; do
		tb rule set dev "$DEV_R" $P rate 4mbit
		if [[ $change == set ]]; then
			run_r strace -f -qq -o /dev/null -e trace=bpf -e inject=bpf:signal=SIGKILL:when=$k \
				"$TBCTL" rule set dev "$DEV_R" $P rate 8mbit >/dev/null 2>&1
		else
			run_r strace -f -qq -o /dev/null -e trace=bpf -e inject=bpf:signal=SIGKILL:when=$k \
				"$TBCTL" rule del dev "$DEV_R" $P >/dev/null 2>&1
		fi
		shown=$(listed)
		case $change,$shown in
		set,$OLD | set,$NEW | del,$OLD | del,) ;;
		*) bad=1; echo "kill at bpf() call $k of rule $change: rule list shows '$shown'" ;;
		esac
		# The next change, to another prefix, repairs: one slot, as shown.
		tb rule set dev "$DEV_R" 198.18.65.0/24 rate 1mbit
		[[ $(slots) == "$shown" ]] || { bad=1; echo "kill at call $k of rule $change: slots '$(slots)' after repair, shown '$shown'"; }
		[[ $(listed) == "$shown" ]] || { bad=1; echo "kill at call $k of rule $change: rule list changed to '$(listed)'"; }
		seen+=" ${shown:-none}"
	done
	check "rule $change killed at $kills (seed $TB_SEED), one point of each phase: old or new rule, repaired by the next change" [ "$bad" = 0 ]
	check "rule $change: the kills left both outcomes ($(xargs -n1 <<<"$seen" | sort | uniq -c | awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }'))" \
		bash -c "grep -q '$([[ $change == set ]] && echo $OLD || echo none)' <<<'$seen' && grep -q '$([[ $change == set ]] && echo $NEW || echo none)' <<<'$seen'"
done
check "detach" tb detach dev "$DEV_R"

# Before each kill of a reset: 40 datagrams from a source over its cap,
# whose drops wait in the CPUs' caches, and 20 into a shared prefix.
# counts: that source's, the prefix's and the global counters.
CAPPED=${SRC4[0]} SHARED=${SRC4[1]}
counts() {
	local rows global
	rows=$(tb -j show dev "$DEV_R" | jq -r --arg a "$CAPPED" --arg s "$SHARED/32" \
		'[.[] | select(.address == $a or .address == $s) | "\(.address) \(.passed_packets) \(.dropped_packets)"] | sort | join(", ")')
	global=$(tb -j stats dev "$DEV_R" | jq -r '"\(.passed_packets) \(.dropped_packets)"')
	echo "$rows; global $global"
}
send_some() {
	in_s "$TBGEN" send --src "$CAPPED" --dst 198.18.0.2 --port 9001 --size 500 --count 40 --pps 4000 >/dev/null &&
		in_s "$TBGEN" send --src "$SHARED" --dst 198.18.0.2 --port 9001 --size 500 --count 20 --pps 4000 >/dev/null
}
check "attach, rules for the reset kills" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -batch - <<<'attach dev $DEV_R
rule set dev $DEV_R default rate 8kbit burst 5k
rule set dev $DEV_R $SHARED/32 rate 8kbit burst 5k scope shared'"
tb reset counters dev "$DEV_R"
send_some
run_r strace -f -qq -e trace=bpf -o "$tmp/trace" "$TBCTL" reset counters dev "$DEV_R" >/dev/null
zero=$(counts)
kill_points "$tmp/trace" >"$tmp/points"
kills=$(sample "reset counters" 1 <"$tmp/points" | xargs)
check "reset counters makes $(grep -c '^[0-9]* *bpf(' "$tmp/trace") bpf() calls ($(wc -l <"$tmp/points") to kill it at), and zeroes: $zero" \
	[ "$(wc -l <"$tmp/points")" -gt 5 -a "$zero" = "$CAPPED 0 0, $SHARED/32 0 0; global 0 0" ]
bad=0 seen=""
for k in $kills; do
	tb reset counters dev "$DEV_R"
	send_some || { bad=1; echo "kill $k: no traffic"; }
	before=$(counts)
	run_r strace -f -qq -o /dev/null -e trace=bpf -e inject=bpf:signal=SIGKILL:when=$k \
		"$TBCTL" reset counters dev "$DEV_R" >/dev/null 2>&1
	after=$(counts)
	if [[ $after == "$before" ]]; then
		seen+=" none"
	elif [[ $after == "$zero" ]]; then
		seen+=" all"
	else
		bad=1
		echo "kill at bpf() call $k of reset counters: before '$before', after '$after'"
	fi
done
check "reset counters killed at $kills (seed $TB_SEED), one point of each phase: all of the reset or none" [ "$bad" = 0 ]
check "the kills left both outcomes ($(xargs -n1 <<<"$seen" | sort | uniq -c | awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }'))" \
	bash -c "grep -q none <<<'$seen' && grep -q all <<<'$seen'"
check "detach" tb detach dev "$DEV_R"

# gone: nothing of tbctl's left on the device.
gone() {
	[[ ! -e /sys/fs/bpf/tbctl/$DEV_R ]] && ! ip -n "$NS_R" link show dev "$DEV_R" | grep -q xdp &&
		! tc -n "$NS_R" qdisc show dev "$DEV_R" | grep -q clsact
}
for mode in xdp tc-ingress; do
	run_r strace -f -qq -e trace=bpf,sendto -o "$tmp/trace" "$TBCTL" attach dev "$DEV_R" mode $mode
	calls=$(grep -c '^[0-9]* *bpf(' "$tmp/trace")
	kill_points --every "$tmp/trace" >"$tmp/points"
	kills=$(sample "attach $mode" 1 <"$tmp/points" | xargs)
	check "attach (mode $mode) makes $calls bpf() calls, $(cut -d' ' -f1 "$tmp/points" | uniq | wc -l) phases between its writes and its hook" \
		[ "$calls" -gt 10 ]
	tb detach dev "$DEV_R"
	bad=0 i=0
	for k in $kills; do
		run_r strace -f -qq -o /dev/null -e trace=bpf -e inject=bpf:signal=SIGKILL:when=$k \
			"$TBCTL" attach dev "$DEV_R" mode $mode >/dev/null 2>&1
		status=$(tb -j status dev "$DEV_R" 2>/dev/null)
		jq -e 'type == "array" or has("error")' <<<"$status" >/dev/null ||
			{ bad=1; echo "kill at attach call $k: status said '$status'"; }
		if ((i++ % 2 == 0)); then
			# Recover by attaching again, then use it.
			tb attach dev "$DEV_R" mode $mode >/dev/null 2>&1 && tb rule set dev "$DEV_R" default rate 1mbit &&
				[[ $(tb -j status dev "$DEV_R" | jq '.[0].attached') == true ]] ||
				{ bad=1; echo "kill at attach call $k: attach again did not recover"; }
		fi
		# Or detach at once: either way nothing may be left.
		tb detach dev "$DEV_R" >/dev/null 2>&1
		gone || { bad=1; echo "kill at attach call $k: detach left $(ls /sys/fs/bpf/tbctl/$DEV_R 2>/dev/null | xargs) $(tc -n "$NS_R" qdisc show dev "$DEV_R" | grep clsact)"; }
	done
	check "attach (mode $mode) killed at $kills (seed $TB_SEED), one point of each phase: the next attach or detach recovers, nothing left" [ "$bad" = 0 ]
done
summary
