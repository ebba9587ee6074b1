#!/usr/bin/env bash
# tbctl killed at bpf() calls of a rule change (strace's fault
# injection): every kill leaves the old rule or the new one, as rule list
# shows it, and the next change repairs what the kill left half-done (a
# prefix in two slots), keeping the rule that was shown. Likewise a batch
# of three changes, each left old or new. Then attach,
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

# A batch of three changes, killed at one point of each phase: each rule
# is old or new on its own (a batch undoes what it did only when a line
# fails, not when it is killed), the next change repairs the slots, and
# the same batch run again leaves exactly its rules (or, where its delete
# was done, is refused whole at that line).
Q=198.18.66.0/24 R=198.18.67.0/24
printf 'rule set dev %s %s rate 8mbit\nrule set dev %s %s rate 2mbit\nrule del dev %s %s\n' \
	"$DEV_R" $P "$DEV_R" $Q "$DEV_R" $R >"$tmp/batch"
# rates: P's, Q's and R's rates as rule list shows them ("none" if gone).
rates() {
	tb -j rule list dev "$DEV_R" | jq -r --arg p $P --arg q $Q --arg r $R \
		'. as $all | [$p, $q, $r] | map(. as $x | [$all[] | select(.prefix == $x) | .rate_bytes_per_sec | tostring] |
			if length == 0 then "none" else join(",") end) | join(" ")'
}
# slot_rates: the same, from the slots the map holds.
slot_rates() {
	run_r "$B/tbbench" slots --dev "$DEV_R" | awk -v p=$P -v q=$Q -v r=$R '
		$2 == p || $2 == q || $2 == r { v[$2] = v[$2] (v[$2] == "" ? "" : ",") $3 }
		END { printf "%s %s %s\n", v[p] == "" ? "none" : v[p], v[q] == "" ? "none" : v[q], v[r] == "" ? "none" : v[r] }'
}
before_batch() {
	tb rule set dev "$DEV_R" $P rate 4mbit && tb rule set dev "$DEV_R" $R rate 1mbit &&
		{ tb rule del dev "$DEV_R" $Q 2>/dev/null || true; }
}
ALL_OLD="$OLD none 125000" ALL_NEW="$NEW 250000 none"
before_batch
check "before the batch: $(rates)" [ "$(rates)" = "$ALL_OLD" ]
run_r strace -f -qq -e trace=bpf -o "$tmp/trace" "$TBCTL" -batch "$tmp/batch"
check "the batch applies: $(rates)" [ "$(rates)" = "$ALL_NEW" ]
kill_points --every "$tmp/trace" >"$tmp/points"
kills=$(sample "batch" 1 <"$tmp/points" | xargs)
check "the batch makes $(grep -c '^[0-9]* *bpf(' "$tmp/trace") bpf() calls, $(cut -d' ' -f1 "$tmp/points" | uniq | wc -l) phases between its writes" \
	[ "$(cut -d' ' -f1 "$tmp/points" | uniq | wc -l)" -gt 3 ]
bad=0 seen=""
for k in $kills; do
	before_batch
	run_r strace -f -qq -o /dev/null -e trace=bpf -e inject=bpf:signal=SIGKILL:when=$k \
		"$TBCTL" -batch "$tmp/batch" >/dev/null 2>&1
	shown=$(rates)
	read -r p q r <<<"$shown"
	[[ $p == @($OLD|$NEW) && $q == @(none|250000) && $r == @(125000|none) ]] ||
		{ bad=1; echo "kill at bpf() call $k of the batch: rule list shows '$shown'"; }
	tb rule set dev "$DEV_R" 198.18.65.0/24 rate 1mbit
	[[ $(slot_rates) == "$shown" && $(rates) == "$shown" ]] ||
		{ bad=1; echo "kill at call $k of the batch: slots '$(slot_rates)', rule list '$(rates)' after repair, shown '$shown'"; }
	# Run again: whole, or, where the kill had deleted R, refused at its
	# line with nothing changed.
	if [[ $r == none ]]; then
		! run_r "$TBCTL" -batch "$tmp/batch" 2>"$tmp/err" && grep -q '^Error: line 3: .*no rule for' "$tmp/err" &&
			[[ $(rates) == "$shown" ]]
	else
		tb -batch "$tmp/batch" && [[ $(rates) == "$ALL_NEW" && $(slot_rates) == "$ALL_NEW" ]]
	fi || { bad=1; echo "kill at call $k of the batch: run again, it left '$(rates)' (slots '$(slot_rates)')"; }
	seen+=" ${shown// //}"
done
check "batch killed at $kills (seed $TB_SEED), one point of each phase: each rule old or new, repaired by the next change, the batch run again whole or refused whole" [ "$bad" = 0 ]
check "the kills left the batch undone and done ($(xargs -n1 <<<"$seen" | sort | uniq -c | awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }'))" \
	bash -c "grep -q '${ALL_OLD// /\/}' <<<'$seen' && grep -q '${ALL_NEW// /\/}' <<<'$seen'"
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

# gone: nothing of tbctl's left on the device: pins, XDP, a clsact qdisc
# or a program on the tcx hook.
gone() {
	[[ ! -e $(pins $NS_R $DEV_R) ]] && ! ip -n "$NS_R" link show dev "$DEV_R" | grep -q xdp &&
		! tc -n "$NS_R" qdisc show dev "$DEV_R" | grep -q clsact &&
		[[ -z $(nsenter --net=/var/run/netns/"$NS_R" "$B/tests/tcxpeer" progs "$DEV_R" ingress) ]]
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
		gone || { bad=1; echo "kill at attach call $k: detach left $(ls $(pins $NS_R $DEV_R) 2>/dev/null | xargs) $(tc -n "$NS_R" qdisc show dev "$DEV_R" | grep clsact)"; }
	done
	check "attach (mode $mode) killed at $kills (seed $TB_SEED), one point of each phase: the next attach or detach recovers, nothing left" [ "$bad" = 0 ]
done
summary
