#!/usr/bin/env bash
# A flood of spoofed sources against a small table must not cost a capped
# real source its bucket: evicting it would hand it a fresh burst. The
# flood is 400,000 live XDP frames from 65,536 addresses of 198.19.0.0/16
# in a scattered order against a table of 4,096, while 198.18.0.10 sends
# at twice its cap for 4 s. (A flood of millions of frames can still push
# a bucket out between two of its lookups: the LRU's rotation clears the
# reference bit, see the README. SPOOF_FRAMES sets the flood's size.)
. "$(dirname "$0")/lib.bash"
setup

SECS=4
RATE=1000000    # bytes/s: 8mbit
BURST=16384
PAYLOAD=200
FRAME=$((PAYLOAD + 42))
MAC_R=$(netns_mac "$NS_R" "$DEV_R")
# NAPI on the receiving veth, so the generator's frames land there.
in_r ethtool -K "$DEV_R" gro on >/dev/null

check "attach, a 4,096-address table" tb attach dev "$DEV_R" mode xdp max-addrs 4096
check "default rule 8mbit, burst 16k" tb rule set dev "$DEV_R" default rate 8mbit burst 16k early off

in_r "$TBGEN" recv --port 9001 --seconds $((SECS + 2)) >"$tmp/recv" &
recv=$!
sleep 0.5
nsenter --net=/var/run/netns/"$NS_S" "$B/tbbench" gen --dev "$DEV_S" --dmac "$MAC_R" --src 198.19.0.0 \
	--sources 65536 --dst 198.18.0.2 --size 64 --seconds "$SECS" --count "${SPOOF_FRAMES:-400000}" >"$tmp/gen" &
gen=$!
# Twice the cap, in small datagrams (8,000 a second of 200 bytes): the
# LRU can still evict a bucket that is looked up often, under enough
# pressure, but rarely between lookups a tenth of a millisecond apart.
in_s "$TBGEN" send --src 198.18.0.10 --dst 198.18.0.2 --port 9001 --size $PAYLOAD --pps 8000 \
	--seconds "$SECS" >"$tmp/sent"
wait "$gen"
wait "$recv"

flood=$(jq .sent_packets "$tmp/gen")
created=$(tb -j stats dev "$DEV_R" | jq .buckets_created)
check "the flood ran ($flood frames) and churned the table ($created buckets created)" \
	[ "$flood" -gt 100000 -a "$created" -gt 20000 ]
got=$(awk '$1 == "198.18.0.10" { print $2 }' "$tmp/recv")
secs=$(awk '$1 == "elapsed" { print $2 }' "$tmp/sent")
# T: from the first datagram sent to the last, and 5 ms for the last to
# reach the receiver's XDP hook.
bound=$(awk -v s="$secs" -v r=$RATE -v b=$BURST -v f=$FRAME 'BEGIN { printf "%d", b + r * (s + 0.005) + f }')
check "the real source was policed (${got:-0} datagrams received)" [ "${got:-0}" -gt 5000 ]
check "the real source admitted $((${got:-0} * FRAME)) bytes <= b + r*T = $bound" \
	[ "$((${got:-0} * FRAME))" -le "$bound" ]
passed=$(show_field 198.18.0.10 passed_packets 2>/dev/null)
check "its bucket was never evicted: it counted every datagram received ($passed of ${got:-0})" \
	[ "$passed" -ge "${got:-0}" ]
summary
