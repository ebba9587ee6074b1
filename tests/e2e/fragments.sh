#!/usr/bin/env bash
# No packet escapes its rule, on real traffic, xdp and tc-ingress. Beside
# a plain default of 10mbit, a port rule of 200kbit for UDP to port 53
# holds b + r*T for: datagrams the sender's stack fragments (IPv4 and
# IPv6), and datagrams behind 12 IPv6 destination-options headers. Later
# fragments whose first never comes, and datagrams behind 20 headers
# (past the walk), are all dropped and counted, never charged to the
# default. What passed is counted on the receiver, by an nftables
# ingress counter (after both hooks), not by tbctl. Then fragmented
# datagrams to a port without a rule all pass, reassembled.
. "$(dirname "$0")/lib.bash"
setup

SEND_S=2
RATE=25000; BURST=4096  # 200kbit, 4k: the port rule
SIZE=2000               # a datagram of two fragments on a 1500-byte MTU
RAW=1000                # a crafted packet's UDP payload
FRAG4=${SRC4[0]} FRAG6=${SRC6[0]} ORPHAN4=${SRC4[1]} ORPHAN6=${SRC6[1]} CHAIN=${SRC6[2]} LONG=${SRC6[3]}

# The receiver's count of what passed both hooks, per source, made anew
# (so from zero) for each mode.
count_arrivals() {
	in_r nft delete table netdev tbfrag 2>/dev/null
	in_r nft -f - <<EOF
table netdev tbfrag {
	chain in {
		type filter hook ingress device $DEV_R priority 0;
		ip saddr $FRAG4 counter comment "$FRAG4"
		ip saddr $ORPHAN4 counter comment "$ORPHAN4"
		ip6 saddr $FRAG6 counter comment "$FRAG6"
		ip6 saddr $ORPHAN6 counter comment "$ORPHAN6"
		ip6 saddr $CHAIN counter comment "$CHAIN"
		ip6 saddr $LONG counter comment "$LONG"
	}
}
EOF
}
# arrived SRC: frames and bytes (Ethernet header included, as the hooks
# charge them) that arrived from SRC since the counters were reset.
arrived() {
	in_r nft -j list chain netdev tbfrag in | jq -r --arg s "$1" \
		'.nftables[] | select(.rule.comment == $s) | .rule.expr[] | select(.counter) |
		 "\(.counter.packets) \(.counter.bytes + 14 * .counter.packets)"'
}
sent_of() { awk 'NF == 4 { n += $4 + 14 * $3 } END { print n + 0 }' "$1"; }
packets_of() { awk 'NF == 4 { n += $3 } END { print n + 0 }' "$1"; }
stat() { tb -j stats dev "$DEV_R" | jq ".$1"; }

# held LABEL SRC SENT: what arrived from SRC within [0.9 r T, b + r T + a frame].
held() {
	local got lo hi
	read -r _ got <<<"$(arrived "$2")"
	lo=$((RATE * SEND_S * 9 / 10))
	hi=$(window_bound "$3" $RATE $BURST 1514)
	check "$mode: $1: $got bytes arrived, bound [$lo, $hi]" between "$lo" "${got:-0}" "$hi"
}

for mode in xdp tc-ingress; do
	check "$mode: attach" tb attach dev "$DEV_R" mode "$mode"
	check "$mode: a plain default" tb rule set dev "$DEV_R" default rate 10mbit
	check "$mode: a port rule" tb rule set dev "$DEV_R" default proto udp dport 53 rate 200kbit burst 4k
	count_arrivals
	before_frag=$(stat fragments_unknown_packets)
	before_hdrs=$(stat headers_unknown_packets)
	# About eight times the rule's rate from each source, all at once.
	in_s "$TBGEN" send --src "$FRAG4,$FRAG6" --dst "$DST4,$DST6" --port 53 --size $SIZE --pps 100 \
		--seconds $SEND_S >"$tmp/frag" &
	s1=$!
	in_s "$TBGEN" raw --src "$ORPHAN4" --dst "$DST4" --shape later --size $RAW --pps 200 --seconds $SEND_S \
		>"$tmp/orphan4" &
	s2=$!
	in_s "$TBGEN" raw --src "$ORPHAN6" --dst "$DST6" --shape later --size $RAW --pps 200 --seconds $SEND_S \
		>"$tmp/orphan6" &
	s3=$!
	in_s "$TBGEN" raw --src "$CHAIN" --dst "$DST6" --shape ext:12 --port 53 --size $RAW --pps 200 \
		--seconds $SEND_S >"$tmp/chain" &
	s4=$!
	in_s "$TBGEN" raw --src "$LONG" --dst "$DST6" --shape ext:20 --port 53 --size $RAW --pps 200 \
		--seconds $SEND_S >"$tmp/long"
	wait $s1 $s2 $s3 $s4

	grep -v "^$FRAG6 " "$tmp/frag" >"$tmp/frag4"
	grep -v "^$FRAG4 " "$tmp/frag" >"$tmp/frag6"
	held "IPv4 datagrams the sender fragmented, to port 53" "$FRAG4" "$tmp/frag4"
	held "IPv6 datagrams the sender fragmented, to port 53" "$FRAG6" "$tmp/frag6"
	held "IPv6 datagrams behind 12 options headers, to port 53" "$CHAIN" "$tmp/chain"
	for s in "$ORPHAN4 orphan4" "$ORPHAN6 orphan6" "$LONG long"; do
		read -r src file <<<"$s"
		read -r got _ <<<"$(arrived "$src")"
		check "$mode: $src ($file): none of $(packets_of "$tmp/$file") sent arrived (${got:-none})" [ "${got:-1}" = 0 ]
	done
	orphans=$(($(packets_of "$tmp/orphan4") + $(packets_of "$tmp/orphan6")))
	got=$(($(stat fragments_unknown_packets) - before_frag))
	check "$mode: every later fragment whose first never came counted: $got of $orphans" [ "$got" -ge "$orphans" ]
	long=$(packets_of "$tmp/long")
	got=$(($(stat headers_unknown_packets) - before_hdrs))
	check "$mode: every datagram behind 20 headers counted: $got of $long" [ "$got" = "$long" ]

	check "$mode: no plain default" tb rule del dev "$DEV_R" default
	in_r "$TBGEN" recv --port 9000 --seconds $RECV_LIMIT --idle 1 >"$tmp/recv" &
	r=$!
	listening "$NS_R" udp 9000
	in_s "$TBGEN" send --src "${SRC4[2]}" --dst "$DST4" --port 9000 --size $SIZE --count 100 --pps 100 \
		--seconds 5 >"$tmp/free"
	wait $r
	got=$(awk -v s="${SRC4[2]}" '$1 == s { print $2 }' "$tmp/recv")
	check "$mode: fragmented datagrams to a port without a rule all pass: ${got:-0} of 100" [ "${got:-0}" = 100 ]
	check "$mode: detach" tb detach dev "$DEV_R"
done
summary
