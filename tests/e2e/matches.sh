#!/usr/bin/env bash
# proto and dport on real UDP floods, xdp and tc-ingress: UDP to one port
# capped per source while UDP to another port from the same sources is
# held only by the general rule; a more specific prefix's port rule beats
# the default's; a pass rule for a port inside a capped prefix receives
# everything. show names each bucket by its address and rule; save and
# apply keep the matches; rule del names a rule by prefix and match. Then
# the matches tbctl refuses.
. "$(dirname "$0")/lib.bash"
setup

SEND_S=3
R_PORT=125000; B_PORT=15000     # 1mbit per source, UDP to port 9053
R_ALL=1000000; B_ALL=100000     # 8mbit per source, everything else
R_NET=250000; B_NET=20000       # 2mbit, UDP to 9053 from 198.18.0.12
PPS=3000                        # per flow: 3 MB/s, three times R_ALL
CAPPED=("${SRC4[0]}" "${SRC4[1]}" "${SRC6[0]}")
NET4=${SRC4[2]}
PASS4=${SRC4[3]}
srcs=$(IFS=,; echo "${CAPPED[*]},$NET4,$PASS4")

got_of() { awk -v s="$1" '$1 == s { print $2 }' "$2"; }
sent_of() { awk -v s="$1" '$1 == s { n += $3 } END { print n + 0 }' "$2"; }
fails() { ! "$@" 2>/dev/null; }
frame_of() { [[ $1 == *:* ]] && echo $FRAME6 || echo $FRAME4; }

# port_capped LABEL SRC RECV SENT RATE BURST: what SRC got through on one
# port, at least 0.9 r T and at most b + r T + one frame.
port_capped() {
	local label=$1 src=$2 recv=$3 sent=$4 r=$5 b=$6 f got lo hi
	f=$(frame_of "$src")
	got=$(($(got_of "$src" "$recv") * f))
	lo=$((r * SEND_S * 9 / 10))
	hi=$(window_bound "$sent" "$r" "$b" "$f")
	check "$mode: $label: $src $got bytes, bound [$lo, $hi]" between $lo $got "$hi"
}

for mode in xdp tc-ingress; do
	check "$mode: attach" tb attach dev "$DEV_R" mode "$mode"
	check "$mode: default rate 8mbit" tb rule set dev "$DEV_R" default rate 8mbit burst $B_ALL
	check "$mode: default proto udp dport 9053" \
		tb rule set dev "$DEV_R" default proto udp dport 9053 rate 1mbit burst $B_PORT
	check "$mode: a /32's proto udp dport 9050-9060" \
		tb rule set dev "$DEV_R" "$NET4/32" proto udp dport 9050-9060 rate 2mbit burst $B_NET
	check "$mode: a pass rule for a port" tb rule set dev "$DEV_R" "$PASS4" proto udp dport 9053 action pass
	in_r "$TBGEN" recv --port 9053 --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv53" &
	r53=$!
	in_r "$TBGEN" recv --port 9000 --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv00" &
	r00=$!
	listening "$NS_R" udp 9053
	listening "$NS_R" udp 9000
	# Paced, at three times the largest cap: two floods at once would
	# take the CPU the VM stage beside this suite needs.
	in_s "$TBGEN" send --src "$srcs" --dst "$DST4,$DST6" --port 9053 --seconds $SEND_S --size $PAYLOAD \
		--pps $PPS >"$tmp/sent53" &
	s53=$!
	in_s "$TBGEN" send --src "$srcs" --dst "$DST4,$DST6" --port 9000 --seconds $SEND_S --size $PAYLOAD \
		--pps $PPS >"$tmp/sent00"
	wait $s53 $r53 $r00

	for s in "${CAPPED[@]}"; do
		port_capped "UDP to 9053 under the default's port rule" "$s" "$tmp/recv53" "$tmp/sent53" \
			$R_PORT $B_PORT
		port_capped "UDP to 9000 under the default rule alone" "$s" "$tmp/recv00" "$tmp/sent00" \
			$R_ALL $B_ALL
	done
	port_capped "UDP to 9053 under its /32's port range" "$NET4" "$tmp/recv53" "$tmp/sent53" $R_NET $B_NET
	got=$(got_of $PASS4 "$tmp/recv53")
	sent=$(sent_of $PASS4 "$tmp/sent53")
	check "$mode: the pass rule's source got through ($got of $sent; the receiver may lose a few)" \
		[ "$got" -ge $((sent * 99 / 100)) ]
	allowed=$(tb -j stats dev "$DEV_R" | jq .allowed_packets)
	check "$mode: tbctl allowed all that arrived ($allowed; received $got, sent $sent)" between "$got" "$allowed" "$sent"

	rows=$(tb -j show dev "$DEV_R" | jq -r --arg a "${CAPPED[0]}" \
		'[.[] | select(.address == $a) | "\(.rule)=\(.passed_packets)"] | sort | join(",")')
	want="default proto udp dport 9053=$(got_of "${CAPPED[0]}" "$tmp/recv53"),default=$(got_of "${CAPPED[0]}" "$tmp/recv00")"
	check "$mode: show gives ${CAPPED[0]} a bucket per rule: $rows" [ "$rows" = "$want" ]
	rows=$(tb -j show dev "$DEV_R" | jq -r --arg a "${CAPPED[2]}" '[.[] | select(.address == $a)] | length')
	check "$mode: and ${CAPPED[2]} two, named by its address: $rows" [ "$rows" = 2 ]
	rows=$(tb -j show dev "$DEV_R" addr "${CAPPED[0]}" | jq -r '[.[].rule] | sort | join(",")')
	check "$mode: show addr ${CAPPED[0]} gives both: $rows" [ "$rows" = "default,default proto udp dport 9053" ]
	check "$mode: the metrics name the port rule" \
		grep -q "address=\"${CAPPED[0]}\",rule=\"default proto udp dport 9053\"" <(tb metrics dev "$DEV_R" top 20)
	check "$mode: top names the address under its port rule" \
		grep -qE "^${CAPPED[0]} +default proto udp dport 9053" <(tb top dev "$DEV_R" -n 1 interval 0.2 rows 20)
	check "$mode: detach" tb detach dev "$DEV_R"
done

check "attach for the saved rules" tb attach dev "$DEV_R" mode xdp
printf 'rule set dev %s default proto udp dport 7 rate 1mbit\nrule set dev %s default proto udp dport 7 rate 2mbit\n' \
	"$DEV_R" "$DEV_R" >"$tmp/batch"
check "a batch sets a port rule, then changes it" tb -batch "$tmp/batch"
check "which it names by its match" grep -q '^default proto udp dport 7 rate 2Mbit' <(tb rule list dev "$DEV_R")
tb rule del dev "$DEV_R" default proto udp dport 7
tb rule set dev "$DEV_R" default proto udp dport 53 rate 200kbit
tb rule set dev "$DEV_R" 198.18.0.0/16 proto tcp sport 80-89 rate 2mbit
tb rule set dev "$DEV_R" 2001:db8::/32 proto icmpv6 rate 1mbit
tb rule set dev "$DEV_R" 2001:db8::/32 rate 5mbit
tb save dev "$DEV_R" >"$tmp/saved"
check "save says each match: $(grep -c ' proto ' "$tmp/saved")" [ "$(grep -c ' proto ' "$tmp/saved")" = 3 ]
check "rule del names the rule by its match" tb rule del dev "$DEV_R" 2001:db8::/32 proto icmpv6
check "which leaves the prefix's plain rule" grep -q '^2001:db8::/32 rate' <(tb rule list dev "$DEV_R")
check "and no icmpv6 rule" fails grep -q icmpv6 <(tb rule list dev "$DEV_R")
check "rule del of a match that has no rule fails" fails tb rule del dev "$DEV_R" default proto udp dport 54
check "apply the saved rules" tb apply dev "$DEV_R" "$tmp/saved"
check "the rules are the saved ones" diff "$tmp/saved" <(tb save dev "$DEV_R")
v=$(tb -j rule list dev "$DEV_R" | jq -r '.[] | select(.proto == "tcp") | "\(.prefix) \(.sport_min)-\(.sport_max)"')
check "rule list -j gives the match: $v" [ "$v" = "198.18.0.0/16 80-89" ]

rule_refused "needs a protocol with ports" default dport 53 rate 1mbit
rule_refused "ports exist for tcp, udp and sctp only" default proto icmp dport 53 rate 1mbit
rule_refused "a port is 0..65535" default proto udp dport 70000 rate 1mbit
rule_refused "reversed" default proto udp dport 9000-8000 rate 1mbit
rule_refused "invalid proto" default proto gre rate 1mbit
rule_refused "never matches an IPv6 prefix" 2001:db8::/32 proto icmp rate 1mbit
rule_refused "action pass takes no \"rate\"" default proto udp action pass rate 1mbit
for port in $(seq 1 14); do tb rule set dev "$DEV_R" 198.18.0.0/24 proto udp dport $port rate 1mbit; done
rule_refused "more than 16 rules with a match would apply to one prefix" 198.18.0.0/25 proto tcp rate 1mbit
check "detach" tb detach dev "$DEV_R"
summary
