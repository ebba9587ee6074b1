#!/usr/bin/env bash
# An upgrade whose shared buckets and global counters grew, on Debian's
# kernel (make fixture builds the next layout's tbctl), the table shared
# by both programs: this build attaches and sets rules, the fixture's
# attach upgrades while a source sends at twice its cap, and the source
# stays within b + r*T and its counters carry on. Then an
# upgrade killed between the swap and the merge is finished by the next
# attach, every count carried exactly once, those the credit holds too.
. "$(dirname "$0")/../../e2e/lib.bash"
setup

NEXT=$B/next/tbctl
SECS=4
RATE=250000     # 2mbit
BURST=16384
SIZE=500
FRAME=$((SIZE + 42))
PINS=$(pins "$NS_R" "$DEV_R")
tnext() { nsenter --net=/var/run/netns/"$NS_R" "$NEXT" "$@"; }

if [[ ! -x $NEXT ]]; then
	fail "the next layout's tbctl is built ($NEXT: run make fixture)"
	summary
	exit
fi
check "this build attaches" tb attach dev "$DEV_R" mode xdp
check "a per-address rule" tb rule set dev "$DEV_R" default rate 2mbit burst $BURST early off
in_r "$TBGEN" recv --port 9001 --seconds $RECV_LIMIT --idle 1 >"$tmp/recv" &
recv=$!
listening "$NS_R" udp 9001
in_s "$TBGEN" send --src 198.18.0.10 --dst 198.18.0.2 --port 9001 --size $SIZE --pps 1000 \
	--seconds $SECS >"$tmp/sent" &
send=$!
policing 198.18.0.10
tnext attach dev "$DEV_R" 2>"$tmp/upgrade"
code=$?
wait "$send" "$recv"
check "the next layout's attach upgrades under traffic (exit $code: $(cat "$tmp/upgrade"))" \
	bash -c "[ $code = 0 ] && grep -q 'upgraded the pinned maps' $tmp/upgrade"
check "no pin is left aside" bash -c "! ls $PINS | grep -q ':pending'"
# Across the upgrade (a fresh bucket would add a burst).
capped 198.18.0.10 "$tmp/recv" "$tmp/sent" $RATE $BURST $FRAME 1000 tnext
check "detach" tnext detach dev "$DEV_R"

# Killed once the new program is hooked, before the merge (the grace
# period's membarrier): the next attach finishes it.
tb attach dev "$DEV_R" mode xdp && tb rule set dev "$DEV_R" default rate 2mbit burst $BURST early off
# A burst that sets credit aside for 30 datagrams: 19 of the 20 are
# admitted from it and counted in its word.
tb rule set dev "$DEV_R" 198.18.0.11/32 rate 8mbit burst 1024k
for src in 198.18.0.10 198.18.0.11; do
	in_s "$TBGEN" send --src $src --dst 198.18.0.2 --port 9001 --size $SIZE --count 20 --pps 2000 >/dev/null
done
credited=$(tb -j show dev "$DEV_R" addr 198.18.0.11 | jq '.[0].passed_packets')
check "the credit's source counted 20 before the upgrade: $credited" [ "${credited:-0}" = 20 ]
# (In a shell of its own, which reports the kill to /dev/null.)
bash -c "nsenter --net=/var/run/netns/$NS_R strace -f -qq -o /dev/null -e trace=membarrier \
	-e inject=membarrier:signal=SIGKILL $NEXT attach dev $DEV_R; true" >/dev/null 2>&1
check "killed before the merge, the new maps wait aside" bash -c "ls $PINS | grep -q ':pending'"
check "the next attach finishes the upgrade" bash -c "nsenter --net=/var/run/netns/$NS_R $NEXT attach dev $DEV_R 2>&1 | grep -q 'upgraded'"
check "nothing is left aside" bash -c "! ls $PINS | grep -q ':pending'"
for src in 198.18.0.10 198.18.0.11; do
	passed=$(show_field $src passed_packets tnext)
	check "$src: the 20 datagrams counted before the kill are counted once: $passed" [ "${passed:-0}" = 20 ]
done
check "detach" tnext detach dev "$DEV_R"
summary
