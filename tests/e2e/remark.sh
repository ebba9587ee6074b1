#!/usr/bin/env bash
# Action remark on real traffic, xdp (and tc-ingress under TB_FULL=1: the
# program tests run both hooks on crafted frames): a source over its rate
# loses nothing, and what it sends beyond b + r*T arrives with the rule's
# DSCP, as the receiver sees it (IP_RECVTOS, IPV6_RECVTCLASS); IPv4 and
# IPv6 from two sources at once. With a peak rate (RFC 2698), what
# arrives at all is within the peak's bound, what arrives unmarked within
# the committed one's, and the rest is dropped. Only upper bounds are
# judged, which a slow machine cannot break. Then the words: save and
# apply keep the DSCP and the peak, and bad words change nothing.
. "$(dirname "$0")/lib.bash"
setup
COUNT=400
PPS=400
RATE=100                   # packets a second
BURST=20
PEAK=200                   # packets a second
PEAK_BURST=40
PORT=9301
S4=${SRC4[0]}
S6=${SRC6[0]}

# dscp_count ADDR DSCP: datagrams from ADDR that arrived with DSCP.
dscp_count() { awk -v a="$1" -v d="$2" '$1 == "dscp" && $2 == a && $3 == d { n = $4 } END { print n + 0 }' "$tmp/recv"; }

# send_from SRC4 SRC6: COUNT datagrams from each at PPS, counted by the
# receiver per DSCP; sets elapsed, and bound_of RATE BURST gives b + r*T.
send_from() {
	in_r "$TBGEN" recv --port $PORT --seconds $RECV_LIMIT --idle 1 --dscp >"$tmp/recv" &
	recv=$!
	bound "$NS_R" -u $PORT
	in_s "$TBGEN" send --src "$1,$2" --dst "$DST4,$DST6" --port $PORT --size 200 --pps $PPS \
		--count $COUNT --seconds 5 >"$tmp/send"
	wait "$recv"
	elapsed=$(awk '$1 == "elapsed" { print $2 }' "$tmp/send")
}
bound_of() { awk -v b="$2" -v r="$1" -v t="$elapsed" 'BEGIN { printf "%d", b + r * (t + 0.005) + 1 }'; }
# arrivals SRC: what SRC sent, and what of it arrived as sent and remarked.
arrivals() {
	sent=$(awk -v a="$1" '$1 == a { n += $3 } END { print n + 0 }' "$tmp/send")
	kept=$(dscp_count "$1" 0)
	remarked=$(dscp_count "$1" 14)
}

modes=(xdp)
[[ ${TB_FULL:-0} == 1 ]] && modes+=(tc-ingress)
for mode in "${modes[@]}"; do
	tb attach dev "$DEV_R" mode "$mode" >/dev/null
	check "$mode: rule set ... action remark af13" tb rule set dev "$DEV_R" default rate ${RATE}pps burst $BURST \
		cost packets action remark af13
	send_from "$S4" "$S6"
	bound=$(bound_of $RATE $BURST)
	for src in "$S4" "$S6"; do
		arrivals "$src"
		check "$mode: $src sent $sent, all arrived: $kept as sent + $remarked remarked" \
			[ "$sent" = $COUNT -a $((kept + remarked)) = "$sent" ]
		check "$mode: $src: $kept kept their class <= b + r*T = $bound" \
			[ "$kept" -ge $BURST -a "$kept" -le "$bound" ]
		check "$mode: $src: show counts them passed ($kept) and monitored ($remarked)" \
			[ "$(show_field "$src" passed_packets)" = "$kept" -a \
			"$(show_field "$src" monitored_packets)" = "$remarked" -a "$(show_field "$src" dropped_packets)" = 0 ]
	done

	check "$mode: rule set ... action remark af13 peak ${PEAK}pps" tb rule set dev "$DEV_R" default \
		rate ${RATE}pps burst $BURST cost packets action remark af13 peak ${PEAK}pps peak-burst $PEAK_BURST
	send_from "${SRC4[1]}" "${SRC6[1]}"
	bound=$(bound_of $RATE $BURST)
	peak_bound=$(bound_of $PEAK $PEAK_BURST)
	for src in "${SRC4[1]}" "${SRC6[1]}"; do
		arrivals "$src"
		check "$mode: $src sent $sent: $kept arrived as sent <= b + r*T = $bound" \
			[ "$sent" = $COUNT -a "$kept" -ge $BURST -a "$kept" -le "$bound" ]
		check "$mode: $src: $kept + $remarked remarked arrived <= the peak's b + r*T = $peak_bound" \
			[ "$remarked" -gt 0 -a $((kept + remarked)) -le "$peak_bound" ]
		check "$mode: $src: show counts them, and the $((sent - kept - remarked)) others dropped" \
			[ "$(show_field "$src" passed_packets)" = "$kept" -a \
			"$(show_field "$src" monitored_packets)" = "$remarked" -a \
			"$(show_field "$src" dropped_packets)" = $((sent - kept - remarked)) ]
	done
	check "$mode: show -j gives the peak bucket's tokens" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j show dev $DEV_R addr ${SRC4[1]} | jq -e '.[0].peak_tokens_packets >= 0' >/dev/null"
	tb detach dev "$DEV_R"
done

tb attach dev "$DEV_R" >/dev/null
check "a remark rule by number" tb rule set dev "$DEV_R" 198.18.0.0/16 rate 1mbit action remark 46
check "a remark rule with a total" tb rule set dev "$DEV_R" 2001:db8::/32 rate 1mbit total 10mbit action remark cs1
check "a remark rule with a peak" tb rule set dev "$DEV_R" 198.18.7.0/24 rate 100kbit action remark af12 peak 200kbit
check "its peak burst: at least the rule's, and the largest aggregate" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j rule list dev $DEV_R |
		jq -e '.[] | select(.prefix == \"198.18.7.0/24\") | .peak_rate_bytes_per_sec == 25000 and .peak_burst_bytes == 65550' >/dev/null"
check "rule list names the DSCP where rule set takes it" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -q '^198.18.0.0/16 rate .* action remark ef scope'"
check "rule list -j gives it as a number and a name" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j rule list dev $DEV_R |
		jq -e '[.[] | select(.action == \"remark\") | [.dscp, .dscp_name]] | sort == [[8, \"cs1\"], [12, \"af12\"], [46, \"ef\"]]' >/dev/null"
tb save dev "$DEV_R" >"$tmp/saved"
tb detach dev "$DEV_R"
check "save and apply keep the DSCP" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -batch $tmp/saved &&
	[ \"\$(nsenter --net=/var/run/netns/$NS_R $TBCTL save dev $DEV_R | tail -n +2)\" = \"\$(tail -n +2 $tmp/saved)\" ]"

# Bad words: refused before anything changes, naming the problem.
rule_refused "needs a DSCP" default rate 1mbit action remark
rule_refused 'invalid DSCP "af14"' default rate 1mbit action remark af14
rule_refused 'invalid DSCP "64"' default rate 1mbit action remark 64
rule_refused 'invalid DSCP "rate"' default action remark rate 1mbit
rule_refused "early applies to action drop and mark only" default rate 1mbit action remark ef early on
rule_refused "peak applies to action remark only" default rate 1mbit peak 2mbit
rule_refused "is below rate" default rate 1mbit action remark ef peak 512kbit
rule_refused 'peak-burst needs "peak RATE"' default rate 1mbit action remark ef peak-burst 64k
rule_refused "below 1500 bytes" default rate 1mbit action remark ef peak 2mbit peak-burst 1k
tb detach dev "$DEV_R"
summary
