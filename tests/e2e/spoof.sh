#!/usr/bin/env bash
# A flood of spoofed sources against a small table must not cost a capped
# real source its bucket: evicting it would hand it a fresh burst. The
# flood is 400,000 live XDP frames from 65,536 addresses of 198.19.0.0/16
# in a scattered order against a table of 4,096, while 198.18.0.10 sends
# at twice its cap for 4 s. SPOOF_FRAMES sets the flood's size.
# Then a source whose bucket is evicted between its packets, during a
# flood: each re-created bucket must start from what the evicted one owed
# (owed[]), or every packet would find a fresh burst.
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

in_r "$TBGEN" recv --port 9001 --seconds $RECV_LIMIT --idle 1 >"$tmp/recv" &
recv=$!
listening "$NS_R" udp 9001
nsenter --net=/var/run/netns/"$NS_S" "$B/tbbench" gen --dev "$DEV_S" --dmac "$MAC_R" --src 198.19.0.0 \
	--sources 65536 --dst 198.18.0.2 --size 64 --seconds "$SECS" --count "${SPOOF_FRAMES:-400000}" >"$tmp/gen" &
gen=$!
# Twice the cap, in small datagrams (8,000 a second of 200 bytes): the
# flood's one-packet sources take the ways of their own kind, so a source
# that sends more than once keeps its bucket.
in_s "$TBGEN" send --src 198.18.0.10 --dst 198.18.0.2 --port 9001 --size $PAYLOAD --pps 8000 \
	--seconds "$SECS" >"$tmp/sent"
wait "$gen"
wait "$recv"

flood=$(jq .sent_packets "$tmp/gen")
created=$(tb -j stats dev "$DEV_R" | jq .buckets_created)
check "the flood ran ($flood frames) and churned the table ($created buckets created)" \
	[ "$flood" -gt 100000 -a "$created" -gt 20000 ]
got=$(awk '$1 == "198.18.0.10" { print $2 }' "$tmp/recv")
bound=$(window_bound "$tmp/sent" $RATE $BURST $FRAME)
check "the real source was policed (${got:-0} datagrams received)" [ "${got:-0}" -gt 5000 ]
check "the real source admitted $((${got:-0} * FRAME)) bytes <= b + r*T = $bound" \
	[ "$((${got:-0} * FRAME))" -le "$bound" ]
passed=$(show_field 198.18.0.10 passed_packets 2>/dev/null)
check "its bucket was never evicted: it counted every datagram received ($passed of ${got:-0})" \
	[ "$passed" -ge "${got:-0}" ]

SPARSE_RATE=2000       # bytes/s: 16kbit
SPARSE_BURST=2048
SPARSE_PAYLOAD=1000
check "rule for the sparse source: 16kbit, burst 2k" \
	tb rule set dev "$DEV_R" 198.18.0.11 rate 16kbit burst 2k early off
in_r "$TBGEN" recv --port 9002 --seconds $RECV_LIMIT --idle 1 >"$tmp/recv2" &
recv=$!
listening "$NS_R" udp 9002
nsenter --net=/var/run/netns/"$NS_S" "$B/tbbench" gen --dev "$DEV_S" --dmac "$MAC_R" --src 198.19.0.0 \
	--sources 4096 --dst 198.18.0.2 --size 64 --seconds "$SECS" --count 20000000 >"$tmp/gen2" &
gen=$!
# The table evicts a bucket when its set is full; this takes the sparse
# source's out every 5 ms for as long as it sends, as eviction does, so
# that every packet of it finds its bucket gone. The flood's churn evicts
# it too, and the faster the CPU the sooner, so the count below is of
# this loop's evictions only.
run_r "$B/tbbench" evict --dev "$DEV_R" --addr 198.18.0.11 --every-ms 5 --seconds "$SECS" >"$tmp/evicted" &
evictor=$!
# 20 datagrams a second of 1,000 bytes (ten times the cap), 50 ms apart.
in_s "$TBGEN" send --src 198.18.0.11 --dst 198.18.0.2 --port 9002 --size $SPARSE_PAYLOAD --pps 20 \
	--seconds "$SECS" >"$tmp/sent2"
wait "$gen"
wait "$evictor"
wait "$recv"

got=$(awk '$1 == "198.18.0.11" { print $2 }' "$tmp/recv2")
sent=$(awk '$1 == "198.18.0.11" { print $3 }' "$tmp/sent2")
evicted=$(jq .evicted "$tmp/evicted")
frame=$((SPARSE_PAYLOAD + 42))
bound=$(window_bound "$tmp/sent2" $SPARSE_RATE $SPARSE_BURST $frame)
check "the sparse source sent ${sent:-0} datagrams and got ${got:-0} through" \
	[ "${sent:-0}" -ge 70 -a "${got:-0}" -ge 5 ]
check "its bucket was evicted and re-created ${evicted:-0} times by this test, and more by the flood" [ "${evicted:-0}" -ge 5 ]
check "evicted again and again, it admitted $((${got:-0} * frame)) bytes <= b + r*T = $bound" \
	[ "$((${got:-0} * frame))" -le "$bound" ]
summary
