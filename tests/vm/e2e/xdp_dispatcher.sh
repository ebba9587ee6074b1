#!/usr/bin/env bash
# tbctl and xdp-filter on one device through libxdp's dispatcher, on
# Debian's kernel (this machine's loads no extension programs): xdp-filter
# drops one UDP port while tbctl polices the rest exactly and never
# charges what the filter dropped; attached in either order; either one
# detached, the other keeps working; xdp-loader status agrees with tbctl
# status; a re-attach under traffic swaps tbctl's program in place, and
# replaces one attached alone (by an earlier release) by a dispatcher;
# without libxdp's dispatcher object the attach fails and leaves nothing.
. "$(dirname "$0")/../../e2e/lib.bash"
setup

SECS=2
# An attach takes seconds, emulated: a swap under traffic sends for longer.
SWAP_SECS=8
RATE=250000     # 2mbit
BURST=16384
SIZE=500
FRAME=$((SIZE + 42))
SRC=198.18.0.10
# make test-full also polices in the second order, replaces a program
# attached alone, and takes the dispatcher object away.
FULL=$((${TB_FULL:-0} == 1))
in_rn() { nsenter --net=/var/run/netns/"$NS_R" "$@"; }
filter() { in_rn xdp-filter "$@" >/dev/null 2>"$tmp/filter.err"; }

# The programs in the dispatcher, as xdp-loader lists them: "PRIO NAME ID" a line.
loader_progs() { in_rn xdp-loader status "$DEV_R" | awk '$1 == "=>" { print $2, $3, $4 }'; }

# The receiver's namespace's UDP datagrams dropped at a full socket
# buffer (emulated, the receiver can fall behind): passed by tbctl, not
# counted by the receiver.
rcvbuf_drops() { in_rn awk '$1 == "Udp:" && !h { for (i = 2; i <= NF; i++) c[$i] = i; h = 1; next }
	$1 == "Udp:" { print $c["RcvbufErrors"] }' /proc/net/snmp; }

# send_both ROUND [SECONDS]: SECS (or SECONDS) of datagrams to the
# policed port at twice the rate, 200 to the filtered one; the receiver
# counts the policed port.
send_both() {
	drops0=$(rcvbuf_drops)
	in_r "$TBGEN" recv --port 9001 --seconds $RECV_LIMIT --idle 2 >"$tmp/recv$1" &
	recv=$!
	listening "$NS_R" udp 9001
	in_s "$TBGEN" send --src $SRC --dst 198.18.0.2 --port 9002 --size $SIZE --pps 200 --count 200 >/dev/null &
	blocked=$!
	in_s "$TBGEN" send --src $SRC --dst 198.18.0.2 --port 9001 --size $SIZE --pps 1000 \
		--seconds "${2:-$SECS}" >"$tmp/sent$1" &
	send=$!
}

# policed ROUND: the policed port within b + r*T, tbctl's counts equal to
# what the receiver counted and to what was sent there: the filtered
# port's datagrams charged nothing.
policed() {
	local sent passed dropped
	wait "$send" "$blocked" "$recv"
	capped $SRC "$tmp/recv$1" "$tmp/sent$1" $RATE $BURST $FRAME 200
	passed=$(show_field $SRC passed_packets)
	dropped=$(show_field $SRC dropped_packets)
	sent=$(awk -v s=$SRC '$1 == s { print $3 }' "$tmp/sent$1")
	drops=$(($(rcvbuf_drops) - drops0))
	check "$1: tbctl passed what the receiver counted: $passed of $CAPPED_GOT (+ $drops at a full socket)" \
		[ "$passed" = $((CAPPED_GOT + drops)) ]
	check "$1: tbctl saw only the policed port: $passed + $dropped = $sent sent there" \
		[ $((passed + dropped)) = "$sent" ]
	tb reset dev "$DEV_R" counters
}

# agree: tbctl's program is the one xdp-loader lists as tb_xdp, at its
# priority, and tbctl status lists the same.
agree() {
	local id listed
	id=$(prog_id tb)
	listed=$(loader_progs | awk '$2 == "tb_xdp" { print $1, $3 }')
	check "$1: xdp-loader lists tbctl's program $id at priority $2 ($listed)" [ "$listed" = "$2 $id" ]
	check "$1: tbctl status names the dispatcher's programs" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL status dev $DEV_R | grep -q 'xdpfilt_.*priority 10.*tb_xdp (id $id, priority $2, tbctl'"
}

# Order A: xdp-filter first, then tbctl.
check "xdp-filter loads through the dispatcher" filter load "$DEV_R" -m native
check "xdp-filter drops UDP port 9002" filter port 9002 -p udp
check "tbctl attaches beside it" tb attach dev "$DEV_R" mode xdp
check "a per-address rule" tb rule set dev "$DEV_R" default rate 2mbit burst $BURST early off
agree "filter first" 20
# A re-attach under traffic: the dispatcher swapped once, tbctl's program
# in its slot; the bucket goes on (a fresh one would add a burst).
old=$(prog_id tb)
send_both a $SWAP_SECS
policing $SRC
check "re-attached under traffic" tb attach dev "$DEV_R"
policed a
check "a new program in the old one's place ($old before)" [ "$(prog_id tb)" != "$old" ]
agree "swapped" 20

check "xdp-filter unloads" filter unload "$DEV_R"
check "tbctl's program is the dispatcher's only one" [ "$(loader_progs | wc -l)" = 1 ]
check "tbctl still polices" bash -c "[ \"\$(nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -r '.[0].attached')\" = true ]"
check "detach" tb detach dev "$DEV_R"
check "nothing left on the hook" bash -c "nsenter --net=/var/run/netns/$NS_R xdp-loader status $DEV_R | grep -q 'No XDP program'"

# Order B: tbctl first, at a priority after the filter's; detaching
# tbctl leaves the filter.
check "tbctl attaches alone" tb attach dev "$DEV_R" mode xdp xdp-priority 30
check "a per-address rule" tb rule set dev "$DEV_R" default rate 2mbit burst $BURST early off
check "xdp-filter loads beside it" filter load "$DEV_R" -m native
check "xdp-filter drops UDP port 9002" filter port 9002 -p udp
agree "tbctl first" 30
if ((FULL)); then
	send_both b
	policing $SRC
	policed b
fi
# Bad input: a priority on a re-attach that would move the program.
err=$(tb attach dev "$DEV_R" xdp-priority 40 2>&1)
check "a re-attach at another priority is refused: \"$err\"" \
	bash -c "[ $? != 0 ] && grep -q 'attached at xdp-priority 30, not 40; detach first' <<<\"\$1\"" _ "$err"
check "and tbctl's program stays at 30" [ "$(loader_progs | awk '$2 == "tb_xdp" { print $1 }')" = 30 ]
check "tbctl detaches" tb detach dev "$DEV_R"
check "xdp-filter's program is left" bash -c "[ \"\$(nsenter --net=/var/run/netns/$NS_R xdp-loader status $DEV_R | awk '\$1 == \"=>\"' | grep -c xdpfilt)\" = 1 ]"
if ((FULL)); then
	in_r "$TBGEN" recv --port 9002 --seconds $RECV_LIMIT --idle 1 >"$tmp/recvf" &
	recv=$!
	listening "$NS_R" udp 9002
	in_s "$TBGEN" send --src $SRC --dst 198.18.0.2 --port 9002 --size $SIZE --count 50 --pps 500 >/dev/null
	wait "$recv"
	check "and it still drops port 9002: $(awk -v s=$SRC '$1 == s { print $2 }' "$tmp/recvf") received" \
		bash -c "! grep -q '^$SRC ' $tmp/recvf"
fi
filter unload "$DEV_R"
((FULL)) || { summary; exit; }

# Attached alone (as by a release before the dispatcher), a re-attach
# under traffic replaces it by a dispatcher holding the new program, in
# one swap: the bucket goes on, every packet charged once.
check "attached alone" env LIBXDP_SKIP_DISPATCHER=1 nsenter --net=/var/run/netns/"$NS_R" "$TBCTL" attach dev "$DEV_R" mode xdp
check "a per-address rule" tb rule set dev "$DEV_R" default rate 2mbit burst $BURST early off
check "no dispatcher yet" bash -c "[ \"\$(nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -r '.[0].xdp_hook')\" = direct ]"
# (No filter now: the policed port alone.)
drops0=$(rcvbuf_drops)
in_r "$TBGEN" recv --port 9001 --seconds $RECV_LIMIT --idle 2 >"$tmp/recvalone" &
recv=$!
listening "$NS_R" udp 9001
in_s "$TBGEN" send --src $SRC --dst 198.18.0.2 --port 9001 --size $SIZE --pps 1000 --seconds $SWAP_SECS \
	>"$tmp/sentalone" &
send=$!
policing $SRC
check "re-attached under traffic, through the dispatcher" tb attach dev "$DEV_R"
wait "$send" "$recv"
capped $SRC "$tmp/recvalone" "$tmp/sentalone" $RATE $BURST $FRAME 200
passed=$(show_field $SRC passed_packets)
drops=$(($(rcvbuf_drops) - drops0))
check "alone: tbctl passed what the receiver counted: $passed of $CAPPED_GOT (+ $drops at a full socket)" \
	[ "$passed" = $((CAPPED_GOT + drops)) ]
check "now in the dispatcher" bash -c "[ \"\$(nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -r '.[0].xdp_hook')\" = dispatcher ]"
check "detach" tb detach dev "$DEV_R"

# libxdp's dispatcher object missing: the attach fails, saying so, and
# leaves nothing attached.
err=$(LIBXDP_OBJECT_PATH=/nonexistent tb attach dev "$DEV_R" mode xdp 2>&1)
check "without libxdp's dispatcher object the attach fails: \"$err\"" \
	bash -c "[ $? != 0 ] && grep -q \"open libxdp's dispatcher /nonexistent/xdp-dispatcher.o\" <<<\"\$1\"" _ "$err"
check "and leaves no pins" bash -c "! ls $(pins "$NS_R" "$DEV_R") 2>/dev/null"
check "nor a program on the hook" bash -c "nsenter --net=/var/run/netns/$NS_R xdp-loader status $DEV_R | grep -q 'No XDP program'"
summary
