#!/usr/bin/env bash
# tc through tcx links, beside another tool's program on the same hook
# (tests/peer/: it counts the IPv4 UDP packets it sees and returns "next",
# or "pass" as Cilium's programs do): tbctl goes first by default, or
# before or after a named program; it polices exactly (b + r*T, its
# bucket counting what the receiver got) while the other program sees
# every packet tbctl passes, or, before it, every packet sent; a
# re-attach, and an upgrade to the next layout, swap tbctl's program in
# place under traffic, charging no packet twice and missing none; detach takes tbctl's program off and
# leaves the other one; tc-hook clsact makes it tbctl's own filter
# instead; placement that cannot be done is refused, and changes nothing.
. "$(dirname "$0")/lib.bash"
setup
TCXPEER=$B/tests/tcxpeer
PEERS=()
session_cleanup() { rm -rf "${PEERS[@]}"; }

R=125000; BURST=20000      # 1mbit, 20 kB
PPS=2000                   # 2 MB/s of FRAME4: 16 times the rate
SEND_S=2
SRC=${SRC4[0]}

# peer_on VERDICT [first|last]: another program on DEV_R's tcx ingress
# hook; its pins' directory in $PEER, its id in $PEER_ID.
peer_on() {
	PEER=$(mktemp -d /sys/fs/bpf/tbtest_peer_XXXXXX)
	PEERS+=("$PEER")
	PEER_ID=$(nsenter --net=/var/run/netns/"$NS_R" "$TCXPEER" attach "$PEER" "$DEV_R" ingress "$@")
}
peer_seen() { "$TCXPEER" seen "$1"; }
# flood NAME [PPS]: SRC's datagrams to DST4 for SEND_S seconds; what the
# receiver counted in $tmp/NAME.recv, what was sent in $tmp/NAME.sent.
flood() {
	in_r "$TBGEN" recv --seconds $RECV_LIMIT --idle 0.5 >"$tmp/$1.recv" &
	local rpid=$!
	listening "$NS_R" udp 9000
	in_s "$TBGEN" send --src "$SRC" --dst "$DST4" --seconds $SEND_S --size $PAYLOAD --pps "${2:-$PPS}" >"$tmp/$1.sent"
	wait $rpid
}
got() { awk -v s="$SRC" '$1 == s { n += $2 } END { print n + 0 }' "$tmp/$1.recv"; }
sent() { awk -v s="$SRC" '$1 == s { print $3 }' "$tmp/$1.sent"; }
hook_names() { tb -j status dev "$DEV_R" | jq -r '[.[0].tcx_programs[].name] | join(" ")'; }
rule() { tb rule set dev "$DEV_R" default rate 1mbit burst $BURST >/dev/null; }

check "another program on the tcx ingress hook" peer_on next
a=$PEER
check "tbctl attaches in mode tc-ingress" tb attach dev "$DEV_R" mode tc-ingress
check "status says it is on the hook through tcx" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -e '.[0].tc_hook == \"tcx\"' >/dev/null"
check "first by default, before the other: $(hook_names)" [ "$(hook_names)" = "tb_tc peer" ]
status_says() { tb status dev "$DEV_R" | grep -qE -- "$1"; }
check "status names the programs on the hook in order" \
	status_says "tcx ingress hook, in the order they run: tb_tc \(id [0-9]+, tbctl's\), peer \(id $PEER_ID\)"
check "status with CAP_BPF alone reads the link from its pin: attached through tcx" \
	bash -c "nsenter --net=/var/run/netns/$NS_R setpriv --bounding-set=-all,+bpf --inh-caps=-all --no-new-privs \
		$TBCTL -j status dev $DEV_R | jq -e '.[0].attached and .[0].tc_hook == \"tcx\"' >/dev/null"
rule
flood first
capped "$SRC" "$tmp/first.recv" "$tmp/first.sent" $R $BURST $FRAME4 50
passed=$(show_field "$SRC" passed_packets)
check "the program after tbctl saw every packet tbctl passed: $(peer_seen "$a") of $passed" \
	[ "$(peer_seen "$a")" = "$passed" ]

# A re-attach swaps the link's program while the flood runs.
id0=$(prog_id tb)
seen0=$(peer_seen "$a")
flood swap &
fpid=$!
sleep 0.7
check "a re-attach under traffic" tb attach dev "$DEV_R"
wait $fpid
id1=$(prog_id tb)
check "it swapped tbctl's program ($id0 -> $id1) in its one link: $(hook_names)" \
	[ "$id0" != "$id1" -a "$(hook_names)" = "tb_tc peer" ]
after=$(show_field "$SRC" passed_packets)
check "across the swap, tbctl's bucket counted each packet the receiver got once: $((after - passed)) of $(got swap)" \
	[ $((after - passed)) = "$(got swap)" ]
check "and the program after it saw the same: $(($(peer_seen "$a") - seen0))" \
	[ $(($(peer_seen "$a") - seen0)) = "$(got swap)" ]

# An upgrade to the next layout (make fixture's build) under traffic: its
# program swapped into the same link, the maps carried over.
tbn() { nsenter --net=/var/run/netns/"$NS_R" "$B/next/tbctl" "$@"; }
passed=$(show_field "$SRC" passed_packets)
seen0=$(peer_seen "$a")
flood upgrade &
fpid=$!
sleep 0.7
check "an upgrade to the next layout under traffic" tbn attach dev "$DEV_R" 2>/dev/null
wait $fpid
check "the upgraded program is in tbctl's one link, still first" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $B/next/tbctl -j status dev $DEV_R |
		jq -e '[.[0].tc_hook, (.[0].tcx_programs | map(.name) | join(\" \"))] == [\"tcx\", \"tb_tc peer\"]' >/dev/null"
after=$(show_field "$SRC" passed_packets tbn)
check "across the upgrade, the bucket counted each packet the receiver got once: $((after - passed)) of $(got upgrade)" \
	[ $((after - passed)) = "$(got upgrade)" ]
check "and the program after it saw the same: $(($(peer_seen "$a") - seen0))" \
	[ $(($(peer_seen "$a") - seen0)) = "$(got upgrade)" ]
check "detach" tbn detach dev "$DEV_R"
seen0=$(peer_seen "$a")
flood alone 500
check "the other program stays, and sees all that was sent: $(($(peer_seen "$a") - seen0)) of $(sent alone)" \
	[ $(($(peer_seen "$a") - seen0)) = "$(sent alone)" ]
check "and nothing is policed any more: received $(got alone) of $(sent alone)" [ "$(got alone)" = "$(sent alone)" ]

check "attach after the other program, by name" tb attach dev "$DEV_R" mode tc-ingress after peer
check "after it: $(hook_names)" [ "$(hook_names)" = "peer tb_tc" ]
rule
seen0=$(peer_seen "$a")
flood second
capped "$SRC" "$tmp/second.recv" "$tmp/second.sent" $R $BURST $FRAME4 50
check "the program before tbctl saw every packet sent: $(($(peer_seen "$a") - seen0)) of $(sent second)" \
	[ $(($(peer_seen "$a") - seen0)) = "$(sent second)" ]
check "detach" tb detach dev "$DEV_R"
rm -f "$a/link"

# A program that ends the hook with "pass", as Cilium's do: tbctl, first,
# still sees every packet.
check "a program that returns pass on the hook" peer_on pass
p=$PEER
check "tbctl attaches before it, by its id" tb attach dev "$DEV_R" mode tc-ingress before "$PEER_ID"
check "before it: $(hook_names)" [ "$(hook_names)" = "tb_tc peer" ]
rule
flood pass
capped "$SRC" "$tmp/pass.recv" "$tmp/pass.sent" $R $BURST $FRAME4 50
check "the passing program after tbctl saw every packet tbctl passed: $(peer_seen "$p") of $CAPPED_GOT" \
	[ "$(peer_seen "$p")" = "$(show_field "$SRC" passed_packets)" ]

# Placement refused, and nothing changed.
id0=$(prog_id tb)
refused() { # CODE PATTERN ARGS...
	local code=$1 pat=$2 err rc
	shift 2
	err=$(tb attach dev "$DEV_R" "$@" 2>&1 >/dev/null)
	rc=$?
	[[ $rc == "$code" ]] && grep -qF -- "$pat" <<<"$err"
	check "attach $*: exit $code, saying '$pat' (exit $rc: $err)" [ $? = 0 ]
	check "attach $*: tbctl's program and the hook unchanged" [ "$(prog_id tb)" = "$id0" -a "$(hook_names)" = "tb_tc peer" ]
}
refused 1 "attached already, and after places a new attachment; detach first to move it" after peer
refused 2 "before and after: give one" mode tc-ingress before peer after peer
refused 2 "after: only a tc mode's program is placed among others" mode xdp after peer
check "detach" tb detach dev "$DEV_R"

# tc-hook clsact: tbctl's own filter, even where the kernel has tcx; the
# tcx programs run before the clsact filters, so the passing one ends the
# hook before it.
check "attach tc-hook clsact" tb attach dev "$DEV_R" mode tc-ingress tc-hook clsact
check "status says clsact" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -e '.[0].tc_hook == \"clsact\"' >/dev/null"
check "tbctl's filter is on the clsact hook" \
	bash -c "tc -n $NS_R filter show dev $DEV_R ingress | grep -q 'handle 0x7b1 .*tb_tc'"
id0=$(prog_id tb)
err=$(tb attach dev "$DEV_R" tc-hook tcx 2>&1)
check "a re-attach through tcx is refused: $err" \
	grep -qF "attached through clsact, not tcx; detach first to change that" <<<"$err"
check "and changes nothing" [ "$(prog_id tb)" = "$id0" ]
check "attach again swaps its filter in place" tb attach dev "$DEV_R"
check "detach" tb detach dev "$DEV_R"
check "and takes the clsact qdisc it made" bash -c "! tc -n $NS_R qdisc show dev $DEV_R | grep -q clsact"
err=$(tb attach dev "$DEV_R" mode tc-ingress tc-hook clsact before peer 2>&1)
check "before with tc-hook clsact is refused: $err" \
	grep -qF "programs are placed among others on a tcx hook, not with tc-hook clsact" <<<"$err"
tb attach dev "$DEV_R" mode xdp tc-hook tcx 2>/dev/null
check "tc-hook with an XDP mode is a usage error (exit $?)" [ $? = 2 ]

err=$(tb attach dev "$DEV_R" mode tc-ingress before nonesuch 2>&1)
check "attach before a program not on the hook: refused naming what is there ($err)" \
	grep -qF "before nonesuch: no such program on the ingress hook, which holds peer (id $PEER_ID)" <<<"$err"
check "and nothing attached" bash -c "! nsenter --net=/var/run/netns/$NS_R $TBCTL status dev $DEV_R >/dev/null 2>&1"
summary
