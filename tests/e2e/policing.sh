#!/usr/bin/env bash
# Per-source caps on real UDP floods in each receive mode: 8 IPv4 and 4
# IPv6 sources, a default rule and a narrower prefix rule; every source
# ends within [0.9 r T, b + r T + one frame] and tbctl's per-address count
# equals what the receiver got; the program's map lookups are all inlined.
# Then jumbo frames, in each mode, charged whole.
. "$(dirname "$0")/lib.bash"
setup

# The receive modes, all but where a caller names fewer (the arm64
# smoke run: tests/vm/arm64.sh).
MODES=${TB_POLICING_MODES:-xdp xdpgeneric tc-ingress}

SEND_S=3
R_DEF=250000; B_DEF=20000      # 2mbit, default rule
R_NAR=125000; B_NAR=15000      # 1mbit, 198.18.0.16/31 and 2001:db8::12/127
srcs=$(IFS=,; echo "${SRC4[*]},${SRC6[*]}")

narrow() { [[ $1 == 198.18.0.16 || $1 == 198.18.0.17 || $1 == 2001:db8::12 || $1 == 2001:db8::13 ]]; }

for mode in $MODES; do
	check "$mode: attach" tb attach dev "$DEV_R" mode "$mode"
	# A lookup the verifier could not inline (two maps reaching one call,
	# as clang may merge lookups) costs every packet ~10 ns.
	id=$(tb -j status dev "$DEV_R" | jq -r '.[0].prog_id')
	check "$mode: the program's map lookups are inlined, none a helper call" \
		bash -c "bpftool prog dump xlated id $id | grep -q 'call' && ! bpftool prog dump xlated id $id | grep -q 'call bpf_map_lookup_elem'"
	tb rule set dev "$DEV_R" default rate 2mbit burst $B_DEF
	tb rule set dev "$DEV_R" 198.18.0.16/31 rate 1mbit burst $B_NAR
	tb rule set dev "$DEV_R" 2001:db8::12/127 rate 1mbit burst $B_NAR
	in_r "$TBGEN" recv --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv" &
	rpid=$!
	listening "$NS_R" udp 9000
	t0=$(now_ms)
	in_s "$TBGEN" send --src "$srcs" --dst "$DST4,$DST6" --seconds $SEND_S --size $PAYLOAD >"$tmp/sent"
	t1=$(now_ms)
	wait $rpid
	for s in "${SRC4[@]}" "${SRC6[@]}"; do
		frame=$FRAME4; [[ $s == *:* ]] && frame=$FRAME6
		r=$R_DEF; b=$B_DEF
		if narrow "$s"; then r=$R_NAR; b=$B_NAR; fi
		sent=$(awk -v s="$s" '$1 == s { print $3 }' "$tmp/sent")
		got=$(awk -v s="$s" '$1 == s { print $2 }' "$tmp/recv")
		got=${got:-0}
		bytes=$((got * frame))
		lo=$((r * SEND_S * 9 / 10))
		hi=$((b + r * (t1 - t0) / 1000 + frame))
		check "$mode: $s received $bytes bytes of $((sent * frame)) sent, bound [$lo, $hi]" \
			between $lo $bytes $hi
		passed=$(show_field "$s" passed_packets)
		check "$mode: $s tbctl passed $passed packets, receiver counted $got" [ "$passed" = "$got" ]
	done
	dropped=$(tb -j stats dev "$DEV_R" | jq .dropped_packets)
	check "$mode: the flood was dropped ($dropped packets)" [ "$dropped" -gt 10000 ]
	check "$mode: detach" tb detach dev "$DEV_R"
done

# Jumbo frames (a 9,000-byte MTU: more than one buffer a frame for native
# XDP) are attached to in every mode and charged whole: of ten 8,042-byte
# frames a 20,000-byte burst passes two, where charging a frame's first
# buffer alone would pass more.
JUMBO=8000
ip -n "$NS_S" link set "$DEV_S" mtu 9000
ip -n "$NS_R" link set "$DEV_R" mtu 9000
for mode in $MODES; do
	check "$mode, MTU 9000: attach" tb attach dev "$DEV_R" mode "$mode"
	tb rule set dev "$DEV_R" default rate 1kbit burst 20000
	in_r "$TBGEN" recv --seconds $RECV_LIMIT --idle 0.5 >"$tmp/recv" &
	rpid=$!
	listening "$NS_R" udp 9000
	in_s "$TBGEN" send --src "${SRC4[0]}" --dst "$DST4" --size $JUMBO --count 10 --seconds 1 >"$tmp/sent"
	wait $rpid
	got=$(awk -v s="${SRC4[0]}" '$1 == s { print $2 }' "$tmp/recv")
	check "$mode, MTU 9000: two of ten jumbo frames received (${got:-0})" [ "${got:-0}" = 2 ]
	v=$(show_field "${SRC4[0]}" passed_packets)/$(show_field "${SRC4[0]}" passed_bytes)
	v=$v/$(show_field "${SRC4[0]}" dropped_packets)/$(show_field "${SRC4[0]}" dropped_bytes)
	check "$mode, MTU 9000: passed/bytes/dropped/bytes $v, every frame whole" \
		[ "$v" = "2/$((2 * (JUMBO + 42)))/8/$((8 * (JUMBO + 42)))" ]
	check "$mode, MTU 9000: detach" tb detach dev "$DEV_R"
done
summary
