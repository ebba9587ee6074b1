#!/usr/bin/env bash
# Action remark on real traffic, xdp (and tc-ingress under TB_FULL=1: the
# program tests run both hooks on crafted frames): a source over its rate
# loses nothing, and what it sends beyond b + r*T arrives with the rule's
# DSCP, as the receiver sees it (IP_RECVTOS, IPV6_RECVTCLASS); IPv4 and
# IPv6 from two sources at once. Only upper bounds on what keeps its
# class are judged, which a slow machine cannot break. Then the words:
# save and apply keep the DSCP, and bad words change nothing.
. "$(dirname "$0")/lib.bash"
setup
COUNT=400
PPS=400
RATE=100                   # packets a second
BURST=20
PORT=9301
S4=${SRC4[0]}
S6=${SRC6[0]}

# dscp_count ADDR DSCP: datagrams from ADDR that arrived with DSCP.
dscp_count() { awk -v a="$1" -v d="$2" '$1 == "dscp" && $2 == a && $3 == d { n = $4 } END { print n + 0 }' "$tmp/recv"; }

modes=(xdp)
[[ ${TB_FULL:-0} == 1 ]] && modes+=(tc-ingress)
for mode in "${modes[@]}"; do
	tb attach dev "$DEV_R" mode "$mode" >/dev/null
	check "$mode: rule set ... action remark af13" tb rule set dev "$DEV_R" default rate ${RATE}pps burst $BURST \
		cost packets action remark af13
	in_r "$TBGEN" recv --port $PORT --seconds $RECV_LIMIT --idle 1 --dscp >"$tmp/recv" &
	recv=$!
	bound "$NS_R" -u $PORT
	in_s "$TBGEN" send --src "$S4,$S6" --dst "$DST4,$DST6" --port $PORT --size 200 --pps $PPS \
		--count $COUNT --seconds 5 >"$tmp/send"
	wait "$recv"
	elapsed=$(awk '$1 == "elapsed" { print $2 }' "$tmp/send")
	bound=$(awk -v b=$BURST -v r=$RATE -v t="$elapsed" 'BEGIN { printf "%d", b + r * (t + 0.005) + 1 }')
	for src in "$S4" "$S6"; do
		sent=$(awk -v a="$src" '$1 == a { n += $3 } END { print n + 0 }' "$tmp/send")
		kept=$(dscp_count "$src" 0)
		remarked=$(dscp_count "$src" 14)
		check "$mode: $src sent $sent, all arrived: $kept as sent + $remarked remarked" \
			[ "$sent" = $COUNT -a $((kept + remarked)) = "$sent" ]
		check "$mode: $src: $kept kept their class <= b + r*T = $bound" \
			[ "$kept" -ge $BURST -a "$kept" -le "$bound" ]
		check "$mode: $src: show counts them passed ($kept) and monitored ($remarked)" \
			[ "$(show_field "$src" passed_packets)" = "$kept" -a \
			"$(show_field "$src" monitored_packets)" = "$remarked" -a "$(show_field "$src" dropped_packets)" = 0 ]
	done
	tb detach dev "$DEV_R"
done

tb attach dev "$DEV_R" >/dev/null
check "a remark rule by number" tb rule set dev "$DEV_R" 198.18.0.0/16 rate 1mbit action remark 46
check "a remark rule with a total" tb rule set dev "$DEV_R" 2001:db8::/32 rate 1mbit total 10mbit action remark cs1
check "rule list names the DSCP where rule set takes it" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -q '^198.18.0.0/16 rate .* action remark ef scope'"
check "rule list -j gives it as a number and a name" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j rule list dev $DEV_R |
		jq -e '[.[] | select(.action == \"remark\") | [.dscp, .dscp_name]] == [[46, \"ef\"], [8, \"cs1\"]]' >/dev/null"
tb save dev "$DEV_R" >"$tmp/saved"
tb detach dev "$DEV_R"
check "save and apply keep the DSCP" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -batch $tmp/saved &&
	[ \"\$(nsenter --net=/var/run/netns/$NS_R $TBCTL save dev $DEV_R | tail -n +2)\" = \"\$(tail -n +2 $tmp/saved)\" ]"

# Bad words: refused before anything changes, naming the problem.
before=$(tb -j rule list dev "$DEV_R")
for words in "action remark|needs a DSCP" "action remark af14|invalid DSCP \"af14\"" \
	"action remark 64|invalid DSCP \"64\"" "action remark rate 1mbit|invalid DSCP \"rate\"" \
	"action remark ef early on|early applies to action drop and mark only"; do
	# shellcheck disable=SC2086 # the words of a rule
	out=$(tb rule set dev "$DEV_R" default rate 1mbit ${words%%|*} 2>&1)
	rc=$?
	check "rule set ${words%%|*}: exit 2, says '${words#*|}' ($out)" \
		bash -c "[ $rc = 2 ] && grep -qF -- '${words#*|}' <<<\"\$1\"" _ "$out"
done
check "the rules are unchanged" [ "$(tb -j rule list dev "$DEV_R")" = "$before" ]
tb detach dev "$DEV_R"
summary
