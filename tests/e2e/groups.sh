#!/usr/bin/env bash
# scope per-/LEN on real UDP floods, xdp and tc-ingress: 16 IPv6 sources
# of one /64 under "::/0 ... scope per-/64" together within b + r*T, and
# a source of a second /64 with a bucket of its own; 7 IPv4 sources of one
# /24 under "0.0.0.0/0 ... scope per-/24" likewise, beside a source of
# another /24 and one with a per-address rule inside the first; a pass
# rule inside the /64 receives everything. show, the metrics and save
# name each group by its prefix. Then the scopes tbctl refuses.
. "$(dirname "$0")/lib.bash"
setup

SEND_S=3
R=250000; B=20000               # 2mbit per group
R_HOST=125000; B_HOST=15000     # 1mbit, 198.18.0.17 alone
G6=("${SRC6[@]}")
for i in $(seq 20 31); do G6+=("2001:db8::$i"); done
PASS6=2001:db8::99
OTHER6=2001:db8:0:1::10
G4=("${SRC4[@]:0:7}")
HOST4=${SRC4[7]}
OTHER4=198.18.1.10
for a in "${G6[@]:4}" $PASS6 $OTHER6; do ip -n "$NS_S" addr add "$a/64" dev "$DEV_S" nodad; done
ip -n "$NS_S" addr add "$OTHER4/16" dev "$DEV_S"
srcs=$(IFS=,; echo "${G6[*]},$PASS6,$OTHER6,${G4[*]},$HOST4,$OTHER4")

got_of() { awk -v s="$1" '$1 == s { print $2 }' "$tmp/recv"; }
sent_of() { awk -v s="$1" '$1 == s { n += $3 } END { print n + 0 }' "$tmp/sent"; }
sum_got() { local s n=0; for s in "$@"; do n=$((n + $(got_of "$s"))); done; echo $n; }

# group_capped LABEL FRAME RATE BURST SRC...: the sources together got
# through at least 0.9 r T and at most b + r T + one frame.
group_capped() {
	local label=$1 frame=$2 r=$3 b=$4 got lo hi
	shift 4
	got=$(($(sum_got "$@") * frame))
	lo=$((r * SEND_S * 9 / 10))
	hi=$(window_bound "$tmp/sent" "$r" "$b" "$frame")
	check "$mode: $label: $# sources together $got bytes, bound [$lo, $hi]" between $lo $got "$hi"
}

for mode in xdp tc-ingress; do
	check "$mode: attach" tb attach dev "$DEV_R" mode "$mode"
	check "$mode: ::/0 per-/64" tb rule set dev "$DEV_R" ::/0 rate 2mbit burst $B scope per-/64
	check "$mode: 0.0.0.0/0 per-/24" tb rule set dev "$DEV_R" 0.0.0.0/0 rate 2mbit burst $B scope per-/24
	check "$mode: a host inside a /24 group" tb rule set dev "$DEV_R" $HOST4 rate 1mbit burst $B_HOST
	check "$mode: a pass rule inside a /64 group" tb rule set dev "$DEV_R" $PASS6/128 action pass
	in_r "$TBGEN" recv --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv" &
	rpid=$!
	listening "$NS_R" udp 9000
	in_s "$TBGEN" send --src "$srcs" --dst "$DST4,$DST6" --seconds $SEND_S --size $PAYLOAD >"$tmp/sent"
	wait $rpid

	group_capped "2001:db8::/64" $FRAME6 $R $B "${G6[@]}"
	group_capped "2001:db8:0:1::/64" $FRAME6 $R $B $OTHER6
	group_capped "198.18.0.0/24" $FRAME4 $R $B "${G4[@]}"
	group_capped "198.18.1.0/24" $FRAME4 $R $B $OTHER4
	group_capped "$HOST4 under its own rule" $FRAME4 $R_HOST $B_HOST $HOST4
	check "$mode: the pass rule's source received all it sent ($(got_of $PASS6) of $(sent_of $PASS6))" \
		[ "$(got_of $PASS6)" = "$(sent_of $PASS6)" ]

	v=$(tb -j show dev "$DEV_R" addr 2001:db8::21 | jq -r '.[0] | "\(.address) \(.scope) \(.passed_packets)"')
	check "$mode: show addr 2001:db8::21 names its group: $v" \
		[ "$v" = "2001:db8::/64 per-/64 $(sum_got "${G6[@]}")" ]
	v=$(tb -j show dev "$DEV_R" addr 198.18.0.12 | jq -r '.[0] | "\(.address) \(.passed_packets)"')
	check "$mode: show addr 198.18.0.12 names its group: $v" [ "$v" = "198.18.0.0/24 $(sum_got "${G4[@]}")" ]
	rows=$(tb -j show dev "$DEV_R" | jq -r '[.[].address] | sort | join(" ")')
	check "$mode: show lists the groups and the host: $rows" \
		[ "$rows" = "198.18.0.0/24 198.18.0.17 198.18.1.0/24 2001:db8:0:1::/64 2001:db8::/64" ]
	check "$mode: the metrics name the /64" grep -q 'address="2001:db8::/64"' <(tb metrics dev "$DEV_R" top 10)
	check "$mode: top names the /24" grep -q '^198.18.0.0/24 ' <(tb top dev "$DEV_R" -n 1 interval 0.2)
	check "$mode: detach" tb detach dev "$DEV_R"
done

check "attach for the saved rules" tb attach dev "$DEV_R" mode xdp
tb rule set dev "$DEV_R" ::/0 rate 2mbit scope per-/64
tb rule set dev "$DEV_R" 2001:db8::/32 rate 50mbit scope per-/56
tb rule set dev "$DEV_R" 0.0.0.0/0 rate 10mbit scope per-/24
tb save dev "$DEV_R" >"$tmp/saved"
check "save says each scope" [ "$(grep -c 'scope per-/' "$tmp/saved")" = 3 ]
tb rule del dev "$DEV_R" 2001:db8::/32
check "apply restores them" tb apply dev "$DEV_R" "$tmp/saved"
check "as they were" diff <(tb save dev "$DEV_R") "$tmp/saved"

rule_refused "LEN 0..32 for IPv4" 198.51.100.0/24 rate 1mbit scope per-/64
rule_refused "shorter than the prefix /32" 2001:db8::/32 rate 1mbit scope per-/24
rule_refused "set it on 0.0.0.0/0 and on ::/0" default rate 1mbit scope per-/24
rule_refused "IPv6 groups are at most /64" ::/0 rate 1mbit scope per-/96
rule_refused 'invalid scope "per-/LEN"' ::/0 rate 1mbit scope per-/LEN
rule_refused 'invalid scope "per-/"' ::/0 rate 1mbit scope per-/
rule_refused "action pass takes no \"scope\"" 2001:db8::/48 action pass scope per-/64
check "detach" tb detach dev "$DEV_R"
summary
