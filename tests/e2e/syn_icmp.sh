#!/usr/bin/env bash
# SYN and ICMP rules on real traffic, xdp (and tc-ingress under
# TB_FULL=1: the program tests run both hooks on crafted frames): a SYN
# flood from a source is capped by a rule of SYNs per second while a TCP
# transfer from the same source, whose segments the rule leaves to the
# address's own, keeps its rate (a flood charged to that bucket would
# leave it a tenth); echo requests are capped by a rule of their own, and
# echo replies left to the address's.
# Goodput is judged only against half the rate: make bench measures it.
. "$(dirname "$0")/lib.bash"
setup
SECS=3
RATE=250000                # the address's: 2mbit
SYN_RATE=100               # SYNs a second
SYN_BURST=20
ECHO_RATE=20               # echo requests a second
ECHO_BURST=5
SRC=${SRC4[0]}
in_r iperf3 -s -B "$DST4" -D -I "$tmp/iperf3.pid" >/dev/null
session_cleanup() { [[ -s $tmp/iperf3.pid ]] && kill "$(cat "$tmp/iperf3.pid")" 2>/dev/null; }
listening "$NS_R" tcp 5201

# under RULE FIELD: FIELD of SRC's bucket under the rule listed as RULE.
under() {
	tb -j show dev "$DEV_R" addr "$SRC" | jq -r --arg r "$1" "[.[] | select(.rule == \$r)][0].$2 // 0"
}

modes=(xdp)
[[ ${TB_FULL:-0} == 1 ]] && modes+=(tc-ingress)
for mode in "${modes[@]}"; do
	tb attach dev "$DEV_R" mode "$mode" >/dev/null
	check "$mode: the address's rule" tb rule set dev "$DEV_R" default rate 2mbit burst 64k
	check "$mode: a rule of SYNs a second" tb rule set dev "$DEV_R" default proto tcp flags syn \
		rate ${SYN_RATE}pps burst $SYN_BURST cost packets
	check "$mode: a rule of echo requests a second" tb rule set dev "$DEV_R" default proto icmp type echo-request \
		rate ${ECHO_RATE}pps burst $ECHO_BURST cost packets
	check "$mode: rule list names them as rule set takes them" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -q '^default proto tcp flags syn/syn,ack rate 100pps' &&
			nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -q '^default proto icmp type echo-request rate 20pps'"

	# 5,000 SYNs a second of 54 bytes, more than the address's rate by
	# themselves, once the transfer's own connections are made.
	(sleep 0.5; in_s "$TBGEN" raw --src "$SRC" --dst "$DST4" --port 5201 --shape syn --pps 5000 \
		--seconds $((SECS - 1)) >"$tmp/syn") &
	flood=$!
	t0=$(now_ms)
	iperf3_to "$DST4" $SECS "$tmp/j" -B "$SRC"
	t1=$(now_ms)
	wait "$flood"
	sent=$(awk '$1 == "'"$SRC"'" { print $3 }' "$tmp/syn")
	elapsed=$(awk '$1 == "elapsed" { print $2 }' "$tmp/syn")
	passed=$(under "default proto tcp flags syn/syn,ack" passed_packets)
	dropped=$(under "default proto tcp flags syn/syn,ack" dropped_packets)
	bound=$(awk -v b=$SYN_BURST -v r=$SYN_RATE -v t="$elapsed" 'BEGIN { printf "%d", b + r * (t + 0.6) + 2 }')
	check "$mode: the flood's $sent SYNs: $passed passed <= b + r*T = $bound (the transfer's own among them)" \
		[ "${sent:-0}" -gt 1000 -a "${passed:-0}" -le "$bound" -a "${passed:-0}" -ge $SYN_BURST ]
	check "$mode: the rest dropped by the SYN rule ($dropped)" [ "${dropped:-0}" -ge $((sent - bound)) ]
	got=$(jq '.end.sum_received.bytes // 0' "$tmp/j")
	low=$((RATE * SECS / 2))
	hi=$((65536 + RATE * (t1 - t0) / 1000))
	admitted=$(under default passed_bytes)
	check "$mode: the transfer from the same source kept its rate: $got bytes >= half of r*T = $low" \
		[ "${got:-0}" -ge "$low" ]
	check "$mode: its bucket admitted $admitted bytes <= b + r*T = $hi" [ "${admitted:-0}" -le "$hi" ]

	# 200 echo requests in a second, and 100 echo replies, which the echo
	# rule leaves to the address's own.
	before=$(under default passed_packets)
	in_s "$TBGEN" raw --src "$SRC" --dst "$DST4" --shape icmp:8 --size 56 --pps 200 --count 200 --seconds 5 \
		>"$tmp/echo"
	in_s "$TBGEN" raw --src "$SRC" --dst "$DST4" --shape icmp:0 --size 56 --pps 1000 --count 100 --seconds 5 \
		>/dev/null
	elapsed=$(awk '$1 == "elapsed" { print $2 }' "$tmp/echo")
	passed=$(under "default proto icmp type echo-request" passed_packets)
	dropped=$(under "default proto icmp type echo-request" dropped_packets)
	bound=$(awk -v b=$ECHO_BURST -v r=$ECHO_RATE -v t="$elapsed" 'BEGIN { printf "%d", b + r * (t + 0.005) + 1 }')
	check "$mode: 200 echo requests: $passed passed <= b + r*T = $bound, $dropped dropped" \
		[ "${passed:-0}" -ge $ECHO_BURST -a "${passed:-0}" -le "$bound" -a $((passed + dropped)) = 200 ]
	check "$mode: the 100 echo replies went by the address's rule" \
		[ $(($(under default passed_packets) - before)) -ge 100 ]
	tb detach dev "$DEV_R"
done

# Bad words: refused before anything changes, naming the problem.
tb attach dev "$DEV_R" >/dev/null
tb rule set dev "$DEV_R" default rate 2mbit
before=$(tb -j rule list dev "$DEV_R")
for words in "proto udp flags syn|flags exist for tcp only" "proto tcp flags syn/ack|sets flags that" \
	"proto tcp flags bogus|invalid flags" "proto icmp type echo|unknown icmp type" \
	"proto icmp type 300|a type is 0..255" "proto tcp type 8|types exist for icmp and icmpv6 only" \
	"flags syn|needs a protocol: proto tcp"; do
	# shellcheck disable=SC2086 # the words of a rule
	out=$(tb rule set dev "$DEV_R" default ${words%%|*} rate 1mbit 2>&1)
	rc=$?
	check "rule set ${words%%|*}: exit 2, says \"${words#*|}\" ($out)" \
		bash -c "[ $rc = 2 ] && grep -qF -- \"${words#*|}\" <<<\"\$1\"" _ "$out"
done
check "the rules are unchanged" [ "$(tb -j rule list dev "$DEV_R")" = "$before" ]
tb detach dev "$DEV_R"
summary
