#!/usr/bin/env bash
# A shared prefix rule caps the prefix's sum; a monitor rule drops nothing
# and counts what it would have dropped; an allow-listed prefix passes
# under a default cap, uncharged.
. "$(dirname "$0")/lib.bash"
setup

SEND_S=3
R=250000; B=20000
shared_srcs=(198.18.0.10 198.18.0.11 198.18.0.12 198.18.0.13 198.18.0.14 198.18.0.15)
mon_srcs=(198.18.0.16 198.18.0.17)
PPS=1500   # per monitored source: 1.5 MB/s against a 1mbit rule, but easy for the receiver

check "attach" tb attach dev "$DEV_R" mode xdp
check "shared rule" tb rule set dev "$DEV_R" 198.18.0.8/29 rate 2mbit burst $B scope shared
check "monitor rule" tb rule set dev "$DEV_R" 198.18.0.16/31 rate 1mbit burst 15000 action monitor
# The two phases run one after the other: a flood sharing the veth with the
# monitored sources can fill the peer's XDP ring, and frames dropped there
# never reach the policer, so "received all sent" would test the veth.
in_r "$TBGEN" recv --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv" &
rpid=$!
listening "$NS_R" udp 9000
t0=$(now_ms)
in_s "$TBGEN" send --src "$(IFS=,; echo "${shared_srcs[*]}")" --dst "$DST4" --seconds $SEND_S \
	--size $PAYLOAD >"$tmp/sent_shared"
t1=$(now_ms)
wait $rpid
sum=0
for s in "${shared_srcs[@]}"; do
	got=$(awk -v s="$s" '$1 == s { print $2 }' "$tmp/recv")
	sum=$((sum + ${got:-0}))
done
bytes=$((sum * FRAME4))
check "shared /29: 6 sources together received $bytes bytes, bound [$((R * SEND_S * 9 / 10)), $((B + R * (t1 - t0) / 1000 + FRAME4))]" \
	between $((R * SEND_S * 9 / 10)) $bytes $((B + R * (t1 - t0) / 1000 + FRAME4))
row=$(tb -j show dev "$DEV_R" addr 198.18.0.12)
check "show addr under a shared rule shows the prefix's bucket" \
	[ "$(jq -r '.[0].address + " " + .[0].scope' <<<"$row")" = "198.18.0.8/29 shared" ]
check "shared bucket passed packets equal the receiver's sum" [ "$(jq '.[0].passed_packets' <<<"$row")" = "$sum" ]

in_r "$TBGEN" recv --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv" &
rpid=$!
listening "$NS_R" udp 9000
t0=$(now_ms)
in_s "$TBGEN" send --src "$(IFS=,; echo "${mon_srcs[*]}")" --dst "$DST4" --seconds $SEND_S \
	--size $PAYLOAD --pps $PPS >"$tmp/sent_mon"
t1=$(now_ms)
wait $rpid
for s in "${mon_srcs[@]}"; do
	sent=$(awk -v s="$s" '$1 == s { print $3 }' "$tmp/sent_mon")
	got=$(awk -v s="$s" '$1 == s { print $2 }' "$tmp/recv")
	row=$(tb -j show dev "$DEV_R" addr "$s")
	check "monitor: $s received all $sent sent (got ${got:-0})" [ "${got:-0}" = "$sent" ]
	check "monitor: $s nothing dropped" [ "$(jq '.[0].dropped_packets' <<<"$row")" = 0 ]
	mon=$(jq '.[0].monitored_packets' <<<"$row")
	pass=$(jq '.[0].passed_packets' <<<"$row")
	check "monitor: $s counted $mon over the limit" [ "$mon" -gt $((sent / 2)) ]
	check "monitor: $s passed + monitored == sent" [ $((mon + pass)) = "$sent" ]
	check "monitor: $s within-limit bytes $((pass * FRAME4)) <= b + r T" \
		[ $((pass * FRAME4)) -le $((15000 + 125000 * (t1 - t0) / 1000 + FRAME4)) ]
done

# The monitored /31 allow-listed under a default cap it would exceed.
check "default cap" tb rule set dev "$DEV_R" default rate 1mbit burst 15000
check "allow-list the /31" tb rule set dev "$DEV_R" 198.18.0.16/31 action pass
tb reset dev "$DEV_R" counters >/dev/null
in_r "$TBGEN" recv --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv" &
rpid=$!
listening "$NS_R" udp 9000
in_s "$TBGEN" send --src "$(IFS=,; echo "${mon_srcs[*]}")" --dst "$DST4" --seconds $SEND_S \
	--size $PAYLOAD --pps $PPS >"$tmp/sent_pass"
wait $rpid
total=0
for s in "${mon_srcs[@]}"; do
	sent=$(awk -v s="$s" '$1 == s { print $3 }' "$tmp/sent_pass")
	got=$(awk -v s="$s" '$1 == s { print $2 }' "$tmp/recv")
	total=$((total + ${sent:-0}))
	check "allow-listed: $s received all $sent sent at 12 times the default cap (got ${got:-0})" \
		[ "${got:-0}" = "$sent" -a "${sent:-0}" -gt 1000 ]
	check "allow-listed: $s charged to no bucket (the monitor phase's counted nothing since the reset)" \
		[ "$(tb -j show dev "$DEV_R" addr "$s" | jq '[.[] | .passed_packets + .dropped_packets] | add // 0')" = 0 ]
done
check "allow-listed: the global counters passed them all, as allowed, and dropped none" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j stats dev $DEV_R |
		jq -e '.passed_packets >= $total and .allowed_packets == $total and .dropped_packets == 0' >/dev/null"
summary
