#!/usr/bin/env bash
# mode tc-egress key dst on the sending host caps what each destination
# receives, whichever sources it comes from; under per-/24 and per-/64
# rules, what each destination group receives together; under a total,
# what the destinations of a prefix receive together; under a port rule,
# what each destination receives on that port.
. "$(dirname "$0")/lib.bash"
setup

SEND_S=3
R=250000; B=20000
dsts=(198.18.0.2 198.18.0.3 198.18.0.4 2001:db8::2 2001:db8::3)

check "attach tc-egress key dst on the sender" tbs attach dev "$DEV_S" mode tc-egress key dst
check "rule set" tbs rule set dev "$DEV_S" default rate 2mbit burst $B
in_r "$TBGEN" recv --by dst --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv" &
rpid=$!
listening "$NS_R" udp 9000
t0=$(now_ms)
in_s "$TBGEN" send --src "${SRC4[0]},${SRC4[1]},${SRC6[0]},${SRC6[1]}" --dst "$(IFS=,; echo "${dsts[*]}")" \
	--seconds $SEND_S --size $PAYLOAD >"$tmp/sent"
t1=$(now_ms)
wait $rpid
for d in "${dsts[@]}"; do
	frame=$FRAME4; [[ $d == *:* ]] && frame=$FRAME6
	got=$(awk -v d="$d" '$1 == d { print $2 }' "$tmp/recv")
	got=${got:-0}
	bytes=$((got * frame))
	lo=$((R * SEND_S * 9 / 10))
	hi=$((B + R * (t1 - t0) / 1000 + frame))
	check "destination $d received $bytes bytes from 2 sources, bound [$lo, $hi]" between $lo $bytes $hi
	passed=$(show_field "$d" passed_packets tbs "$DEV_S")
	check "destination $d: tbctl passed $passed, receiver counted $got" [ "$passed" = "$got" ]
done
check "no bucket for a source address" \
	bash -c "! nsenter --net=/var/run/netns/$NS_S $TBCTL show dev $DEV_S addr ${SRC4[0]} >/dev/null 2>&1"

check "0.0.0.0/0 per-/24" tbs rule set dev "$DEV_S" 0.0.0.0/0 rate 2mbit burst $B scope per-/24
check "::/0 per-/64" tbs rule set dev "$DEV_S" ::/0 rate 2mbit burst $B scope per-/64
in_r "$TBGEN" recv --by dst --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv" &
rpid=$!
listening "$NS_R" udp 9000
in_s "$TBGEN" send --src "${SRC4[0]},${SRC6[0]}" --dst "$(IFS=,; echo "${dsts[*]}")" \
	--seconds $SEND_S --size $PAYLOAD >"$tmp/sent"
wait $rpid
for g in "198.18.0.0/24 $FRAME4 ${dsts[*]:0:3}" "2001:db8::/64 $FRAME6 ${dsts[*]:3:2}"; do
	read -r name frame members <<<"$g"
	got=0
	for d in $members; do got=$((got + $(awk -v d="$d" '$1 == d { print $2 }' "$tmp/recv"))); done
	lo=$((R * SEND_S * 9 / 10))
	hi=$(window_bound "$tmp/sent" $R $B "$frame")
	check "group $name ($members) received $((got * frame)) bytes together, bound [$lo, $hi]" \
		between $lo $((got * frame)) "$hi"
	v=$(tbs -j show dev "$DEV_S" addr "${members%% *}" | jq -r '.[0] | "\(.address) \(.passed_packets)"')
	check "show addr ${members%% *} names the group: $v" [ "$v" = "$name $got" ]
done
RT=375000; BT=30000             # 3mbit for the three IPv4 destinations together
check "198.18.0.0/16 with a total" \
	tbs rule set dev "$DEV_S" 198.18.0.0/16 rate 2mbit burst $B total 3mbit total-burst $BT
in_r "$TBGEN" recv --by dst --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv" &
rpid=$!
listening "$NS_R" udp 9000
in_s "$TBGEN" send --src "${SRC4[0]}" --dst "$(IFS=,; echo "${dsts[*]:0:3}")" \
	--seconds $SEND_S --size $PAYLOAD >"$tmp/sent"
wait $rpid
sum=0
for d in "${dsts[@]:0:3}"; do
	got=$(($(awk -v d="$d" '$1 == d { print $2 }' "$tmp/recv") * FRAME4))
	sum=$((sum + got))
	hi=$(window_bound "$tmp/sent" $R $B $FRAME4)
	check "total: destination $d received $got bytes, within b + r*T = $hi" [ "$got" -le "$hi" ]
done
lo=$((RT * SEND_S * 9 / 10))
hi=$(window_bound "$tmp/sent" $RT $BT $FRAME4)
check "total: the three received $sum bytes together, bound [$lo, $hi]" between $lo $sum "$hi"
# A port rule keyed by destination: each destination's UDP to port 9000
# at 1mbit, beside the rules above.
RP=125000; BP=15000
check "a port rule, keyed by destination" \
	tbs rule set dev "$DEV_S" 198.18.0.0/16 proto udp dport 9000 rate 1mbit burst $BP
in_r "$TBGEN" recv --by dst --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv" &
rpid=$!
listening "$NS_R" udp 9000
in_s "$TBGEN" send --src "${SRC4[0]},${SRC4[1]}" --dst "${dsts[0]}" --seconds $SEND_S --size $PAYLOAD --pps 1000 \
	>"$tmp/sent"
wait $rpid
got=$(($(awk -v d="${dsts[0]}" '$1 == d { print $2 }' "$tmp/recv") * FRAME4))
lo=$((RP * SEND_S * 9 / 10))
hi=$(window_bound "$tmp/sent" $RP $BP $FRAME4)
check "port rule: ${dsts[0]} received $got bytes from 2 sources, bound [$lo, $hi]" between $lo $got "$hi"
check "detach" tbs detach dev "$DEV_S"
check "no clsact qdisc left" lacks clsact tc -n "$NS_S" qdisc show dev "$DEV_S"
summary
