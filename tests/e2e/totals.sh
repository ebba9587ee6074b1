#!/usr/bin/env bash
# total RATE on real UDP floods, xdp and tc-ingress: 15 IPv4 sources of a
# /28, each sending many times its per-address cap, each within its own
# b + r*T and all of them together within the total's B + R*T, which
# binds; show, the metrics and save say the total. Then the totals tbctl
# refuses.
. "$(dirname "$0")/lib.bash"
setup

SEND_S=3
R=125000; B=15000               # 1mbit each
RT=500000; BT=40000             # 4mbit together
G=()
for i in $(seq 1 15); do G+=("198.18.2.$i"); done
for a in "${G[@]}"; do ip -n "$NS_S" addr add "$a/16" dev "$DEV_S"; done
srcs=$(IFS=,; echo "${G[*]}")

got_of() { awk -v s="$1" '$1 == s { print $2 + 0 }' "$tmp/recv"; }

for mode in xdp tc-ingress; do
	check "$mode: attach" tb attach dev "$DEV_R" mode "$mode"
	check "$mode: a /28 with a total" \
		tb rule set dev "$DEV_R" 198.18.2.0/28 rate 1mbit burst $B total 4mbit total-burst $BT
	in_r "$TBGEN" recv --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv" &
	rpid=$!
	listening "$NS_R" udp 9000
	in_s "$TBGEN" send --src "$srcs" --dst "$DST4" --seconds $SEND_S --size $PAYLOAD >"$tmp/sent"
	wait $rpid

	hi=$(window_bound "$tmp/sent" $R $B $FRAME4)
	sum=0; over=0
	for a in "${G[@]}"; do
		got=$(($(got_of "$a") * FRAME4))
		sum=$((sum + got))
		[ "$got" -le "$hi" ] || { over=$((over + 1)); echo "  $a: $got bytes > $hi"; }
	done
	check "$mode: each of 15 sources within b + r*T = $hi bytes" [ $over = 0 ]
	lo=$((RT * SEND_S * 9 / 10))
	hi=$(window_bound "$tmp/sent" $RT $BT $FRAME4)
	check "$mode: together $sum bytes, within [0.9 R*T, B + R*T] = [$lo, $hi]" between $lo $sum "$hi"

	v=$(tb -j show dev "$DEV_R" | jq -r '.[] | select(.scope == "total") | "\(.address) \(.passed_packets)"')
	check "$mode: show has the total's row, which passed every datagram received: $v" \
		[ "$v" = "198.18.2.0/28 $((sum / FRAME4))" ]
	v=$(tb -j show dev "$DEV_R" addr 198.18.2.7 | jq -r '.[0] | .dropped_packets')
	check "$mode: a source's bucket counts what the total refused as dropped ($v)" [ "$v" -gt 0 ]
	check "$mode: the metrics count the total's refusals" \
		grep -Eq '^tbctl_rule_total_refused_packets_total\{.*rule="198.18.2.0/28".*\} [1-9]' \
		<(tb metrics dev "$DEV_R")
	check "$mode: detach" tb detach dev "$DEV_R"
done

check "attach for the saved rules" tb attach dev "$DEV_R" mode xdp
tb rule set dev "$DEV_R" 198.18.2.0/28 rate 1mbit total 4mbit
tb rule set dev "$DEV_R" ::/0 rate 2mbit scope per-/64 total 100mbit total-burst 1mb
tb save dev "$DEV_R" >"$tmp/saved"
check "save says each total" [ "$(grep -c ' total [0-9]*bps total-burst ' "$tmp/saved")" = 2 ]
v=$(tb -j rule list dev "$DEV_R" | jq -r '.[] | select(.prefix == "198.18.2.0/28") | "\(.total_rate_bytes_per_sec) \(.total_burst_bytes)"')
check "rule list -j: the total and its default burst, a second of it: $v" [ "$v" = "500000 500000" ]
tb rule set dev "$DEV_R" 198.18.2.0/28 rate 1mbit
check "a rule set without total drops it" [ "$(tb save dev "$DEV_R" | grep -c ' total ')" = 1 ]
check "apply restores it" tb apply dev "$DEV_R" "$tmp/saved"
check "as it was" diff <(tb save dev "$DEV_R") "$tmp/saved"

rule_refused "is below rate 10mbit" 198.18.2.0/28 rate 10mbit total 5mbit
rule_refused "the shared bucket already is the rule's total" 198.18.2.0/28 rate 1mbit scope shared total 4mbit
rule_refused 'total-burst needs "total RATE"' 198.18.2.0/28 rate 1mbit total-burst 10k
rule_refused "action pass takes no \"total\"" 198.18.2.0/28 action pass total 4mbit
rule_refused "total-burst 100 is below 1500 bytes" 198.18.2.0/28 rate 1mbit total 4mbit total-burst 100
check "detach" tb detach dev "$DEV_R"
summary
