#!/usr/bin/env bash
# Changes while traffic flows: a new rate applies within a second, a
# re-attach keeps counters and grants no new burst, and detach leaves no
# trace on the device, in tc or in bpffs; a command loads only the hook
# program it uses; given no mode, attach falls back from native XDP to
# tc-ingress where the device has none.
. "$(dirname "$0")/lib.bash"
setup
S=${SRC4[0]}

passed_bytes() { show_field "$S" passed_bytes; }
rate_over() { # SECONDS: bytes/s admitted over the next SECONDS
	local p0 t0 p1 t1
	p0=$(passed_bytes); t0=$(now_ms)
	sleep "$1"
	p1=$(passed_bytes); t1=$(now_ms)
	echo $(((p1 - p0) * 1000 / (t1 - t0)))
}
flood() { # SECONDS
	in_s "$TBGEN" send --src "$S" --dst "$DST4" --seconds "$1" --size $PAYLOAD >/dev/null &
	fpid=$!
}

# A rate change mid-flow.
check "attach xdp" tb attach dev "$DEV_R" mode xdp
tb rule set dev "$DEV_R" default rate 1mbit burst 10000
flood 6
policing "$S"
before=$(rate_over 1.5)
check "rate change accepted mid-flow" tb rule set dev "$DEV_R" default rate 4mbit burst 10000
sleep 1
after=$(rate_over 1.5)
wait $fpid
check "before the change: $before B/s, expected 125000 +-10%" between 112500 "$before" 137500
check "from 1 s after the change: $after B/s, expected 500000 +-10%" between 450000 "$after" 550000

# A re-attach mid-flow, with a burst large enough that a re-grant shows.
check "detach" tb detach dev "$DEV_R"
check "attach tc-ingress" tb attach dev "$DEV_R" mode tc-ingress
tb rule set dev "$DEV_R" default rate 1mbit burst 200000
rules_before=$(tb rule list dev "$DEV_R")
t0=$(now_ms)
flood 4
policing "$S"
id_before=$(tb -j status dev "$DEV_R" | jq '.[0].prog_id')
count_before=$(show_field "$S" passed_packets)
check "re-attach mid-flow (mode and key kept from the attachment)" tb attach dev "$DEV_R"
id_after=$(tb -j status dev "$DEV_R" | jq '.[0].prog_id')
wait $fpid
t1=$(now_ms)
count_after=$(show_field "$S" passed_packets)
bytes=$(passed_bytes)
check "re-attach swapped the program ($id_before -> $id_after)" [ "$id_before" != "$id_after" ]
check "counters kept across re-attach ($count_before then $count_after)" [ "$count_after" -ge "$count_before" ]
check "rules kept across re-attach" [ "$(tb rule list dev "$DEV_R")" = "$rules_before" ]
hi=$((200000 + 125000 * (t1 - t0) / 1000 + FRAME4))
check "no burst re-granted: $bytes bytes <= b + r T = $hi" [ "$bytes" -le "$hi" ]
check "and the limit kept admitting: $bytes >= 0.9 r T + b" [ "$bytes" -ge $((200000 + 125000 * 4 * 9 / 10)) ]
check "re-attach in another mode is refused" bash -c "! nsenter --net=/var/run/netns/$NS_R $TBCTL attach dev $DEV_R mode xdp 2>/dev/null"

# Detach leaves nothing behind, in every mode.
for mode in xdp xdpgeneric tc-ingress tc-egress; do
	tb detach dev "$DEV_R" 2>/dev/null
	check "$mode: attach" tb attach dev "$DEV_R" mode "$mode"
	id=$(tb -j status dev "$DEV_R" | jq '.[0].prog_id')
	check "$mode: detach" tb detach dev "$DEV_R"
	check "$mode: no XDP program on the link" lacks xdp ip -n "$NS_R" link show dev "$DEV_R"
	check "$mode: no tc filter" [ -z "$(tc -n "$NS_R" filter show dev "$DEV_R" ingress; tc -n "$NS_R" filter show dev "$DEV_R" egress)" ]
	check "$mode: no clsact qdisc" lacks clsact tc -n "$NS_R" qdisc show dev "$DEV_R"
	check "$mode: no pinned state" [ ! -e "$(pins $NS_R $DEV_R)" ]
	check "$mode: program $id freed" eventually bash -c "! bpftool prog show id $id >/dev/null 2>&1"
done

# Another XDP program put in the place of tbctl's (ip link, by hand) is
# not tbctl's: status and metrics do not count it as attached, attach
# does not replace it, and detach removes tbctl's pins but leaves that
# program on the device.
check "xdp: attach" tb attach dev "$DEV_R" mode xdp
ip -n "$NS_R" link set dev "$DEV_R" xdpdrv off
check "another XDP program replaces tbctl's" ip -n "$NS_R" link set dev "$DEV_R" xdpdrv obj "$B/bench.bpf.o" sec xdp
check "status: prog_id 0, not attached" [ "$(tb -j status dev "$DEV_R" | jq -c '.[0] | [.prog_id, .attached]')" = "[0,false]" ]
check "metrics: tbctl_device_attached 0" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL metrics dev $DEV_R | grep -qx 'tbctl_device_attached{dev=\"$DEV_R\"} 0'"
other=$(ip -n "$NS_R" -j link show dev "$DEV_R" | jq '.[0].xdp.prog.id')
check "attach again refuses to replace it" \
	bash -c "! nsenter --net=/var/run/netns/$NS_R $TBCTL attach dev $DEV_R 2>$tmp/err && grep -q 'another XDP program is attached' $tmp/err"
check "and it is still there (id $other)" [ "$(ip -n "$NS_R" -j link show dev "$DEV_R" | jq '.[0].xdp.prog.id')" = "$other" ]
check "detach" tb detach dev "$DEV_R"
check "the other program is still on the device, the pins gone" \
	bash -c "ip -n $NS_R link show dev $DEV_R | grep -q 'prog/xdp id' && [ ! -e $(pins $NS_R $DEV_R) ]"
ip -n "$NS_R" link set dev "$DEV_R" xdpdrv off

# tbctl's program as its clsact filter (tc-hook clsact; where the kernel
# has tcx it goes through a tcx link by default, tests/e2e/tcx.sh).
# A tc filter put at tbctl's handle and priority by hand (classic BPF
# here, which has no program id) is not tbctl's either: attach refuses to
# replace it, over tbctl's pins and on a fresh device alike, and detach
# leaves it. Deleting a clsact qdisc deletes every filter on it, so the
# one tbctl made stays while others' filters are on it.
cbpf=(bpf bytecode "1,6 0 0 4294967295")
check "tc-ingress: attach as a clsact filter" tb attach dev "$DEV_R" mode tc-ingress tc-hook clsact
id=$(tb -j status dev "$DEV_R" | jq '.[0].prog_id')
check "attach again replaces tbctl's own filter (program $id) with its new program" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL attach dev $DEV_R &&
		new=\$(nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq '.[0].prog_id') &&
		[ \"\$new\" != 0 ] && [ \"\$new\" != $id ] &&
		[ \$(tc -n $NS_R filter show dev $DEV_R ingress | grep -c 'handle 0x7b1') = 1 ]"
check "a classic BPF filter replaces tbctl's" \
	tc -n "$NS_R" filter replace dev "$DEV_R" ingress handle 0x7b1 prio 0x7b1 "${cbpf[@]}"
check "status: prog_id 0, not attached" [ "$(tb -j status dev "$DEV_R" | jq -c '.[0] | [.prog_id, .attached]')" = "[0,false]" ]
check "attach again refuses to replace it, and says why" \
	bash -c "! nsenter --net=/var/run/netns/$NS_R $TBCTL attach dev $DEV_R 2>$tmp/err &&
		grep -q \"another tc filter (bpf) is at tbctl's handle and priority (0x7b1) on ingress\" $tmp/err"
check "and it is still there" bash -c "tc -n $NS_R filter show dev $DEV_R ingress | grep -q 'handle 0x7b1 .*bytecode'"
check "detach says it leaves the clsact qdisc, which holds another filter" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL detach dev $DEV_R 2>$tmp/err &&
		grep -q 'the clsact qdisc tbctl made holds other filters; left it in place' $tmp/err"
check "the filter and the clsact are still there, the pins gone" \
	bash -c "tc -n $NS_R filter show dev $DEV_R ingress | grep -q 'handle 0x7b1 .*bytecode' &&
		tc -n $NS_R qdisc show dev $DEV_R | grep -q clsact && [ ! -e $(pins $NS_R $DEV_R) ]"
check "a fresh attach refuses to replace it too" \
	bash -c "! nsenter --net=/var/run/netns/$NS_R $TBCTL attach dev $DEV_R mode tc-ingress tc-hook clsact 2>$tmp/err &&
		grep -q \"another tc filter (bpf) is at tbctl's handle\" $tmp/err &&
		tc -n $NS_R filter show dev $DEV_R ingress | grep -q 'handle 0x7b1 .*bytecode' && [ ! -e $(pins $NS_R $DEV_R) ]"
tc -n "$NS_R" qdisc del dev "$DEV_R" clsact
check "tc-egress: attach as a clsact filter" tb attach dev "$DEV_R" mode tc-egress tc-hook clsact
check "another filter beside tbctl's" tc -n "$NS_R" filter add dev "$DEV_R" egress prio 1 "${cbpf[@]}"
check "detach takes tbctl's filter off and leaves the other and the clsact, saying so" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL detach dev $DEV_R 2>$tmp/err &&
		grep -q 'holds other filters; left it in place' $tmp/err &&
		filters=\$(tc -n $NS_R filter show dev $DEV_R egress) &&
		grep -q 'pref 1 .*bytecode' <<<\"\$filters\" && ! grep -q 'pref 1969' <<<\"\$filters\" &&
		tc -n $NS_R qdisc show dev $DEV_R | grep -q clsact"
tc -n "$NS_R" qdisc del dev "$DEV_R" clsact

# A device deleted and made again under its name (a tunnel or veth
# brought up anew) takes its pins over: the rules, buckets and counters
# carry on, on the new device. One renamed away, or moved to another
# network namespace, where tbctl's program still uses them, keeps them:
# attach under the old name refuses.
G=tbg$ID
# status of device $1: its text matches $2, and jq filter $3 of its -j
# entry prints $4.
status_is() {
	tb status dev "$1" | grep -q "$2" && [ "$(tb -j status dev "$1" | jq -c ".[0] | $3")" = "$4" ]
}
session_cleanup() {
	nsenter --net=/var/run/netns/"$NS_R" "$TBCTL" detach dev "$G" >/dev/null 2>&1
	rm -f "$(lockfile $NS_R $G)"
}
ip -n "$NS_R" link add "$G" type veth peer name "tbh$ID"
ip -n "$NS_R" link set "$G" up
check "$G: attach" tb attach dev "$G"
check "$G: a rule" tb rule set dev "$G" default rate 1mbit burst 10kb
rules=$(tb rule list dev "$G")
ip -n "$NS_R" link del "$G"
check "$G deleted: status says it is gone, and what attach will do" eventually status_is "$G" \
	"NOT ATTACHED here (no device $G of ifindex [0-9]* in this namespace: deleted, or moved to another; made again, attach takes the pins over)" \
	'[.attached, .device]' '[false,"gone"]'
check "$G deleted: the metrics read it not attached" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL metrics dev $G | grep -qx 'tbctl_device_attached{dev=\"$G\"} 0'"
ip -n "$NS_R" link add "$G" type veth peer name "tbh$ID"
ip -n "$NS_R" link set "$G" up
check "$G made again: attach takes its pins over, and says so" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL attach dev $G 2>$tmp/err &&
		grep -q 'the device was made again (ifindex [0-9]*, was [0-9]*); its rules, buckets and counters carry over' $tmp/err"
id=$(tb -j status dev "$G" | jq '.[0].prog_id')
check "$G: attached, the rule kept" \
	bash -c "[ \"\$(nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $G | jq '.[0].attached')\" = true ] &&
		[ \"\$(nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $G)\" = '$rules' ]"
check "$G: its program ($id) uses the pinned maps" \
	bash -c "bpftool -j prog show id $id | jq -e --argjson m \"\$(bpftool -j map show pinned $(pins $NS_R $G)/config | jq .id)\" '.map_ids | index(\$m)' >/dev/null"
check "$G: attach again says nothing more" [ -z "$(tb attach dev "$G" 2>&1)" ]
ip -n "$NS_R" link set "$G" down
ip -n "$NS_R" link set "$G" name "tbq$ID"
ip -n "$NS_R" link add "$G" type veth peer name "tbi$ID"
check "$G renamed to tbq$ID: status says where it is attached" status_is "$G" \
	"attached to tbq$ID, as the device is now named (program [0-9]*)" '[.attached, .device]' '[true,"renamed"]'
check "$G renamed to tbq$ID: attach under its old name refuses, naming it" \
	bash -c "! nsenter --net=/var/run/netns/$NS_R $TBCTL attach dev $G 2>$tmp/err &&
		grep -q 'belongs to ifindex [0-9]*, now named tbq$ID, where tbctl.s program (id [0-9]*) uses it; rename it back to $G' $tmp/err"
ip -n "$NS_R" link set "tbq$ID" netns "$NS_S"
# Its XDP hook is out of this namespace's sight now: status and the
# metrics say so alike, whatever their capabilities (privilege.sh).
check "tbq$ID moved to $NS_S: status under $G says it is not here" status_is "$G" \
	"NOT ATTACHED here (no device $G of ifindex [0-9]* in this namespace: deleted, or moved to another" \
	'[.attached, .device]' '[false,"gone"]'
check "tbq$ID moved to $NS_S: the metrics under $G say the same" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL metrics dev $G | grep -qx 'tbctl_device_attached{dev=\"$G\"} 0'"
check "tbq$ID moved to $NS_S: attach under $G refuses, naming the program that uses the pins" \
	bash -c "! nsenter --net=/var/run/netns/$NS_R $TBCTL attach dev $G 2>$tmp/err &&
		grep -q 'which this network namespace does not have, and program [0-9]* uses it; detach it where that device is' $tmp/err"
ip -n "$NS_S" link del "tbq$ID"
check "$G: detach removes the pins" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL detach dev $G && [ ! -e $(pins $NS_R $G) ]"
ip -n "$NS_R" link del "$G"

# Where the pins are out of sight (bpffs unmounted in a mount namespace),
# tbctl still finds its program by the device: attach refuses to stack a
# second one and says why, detach removes it. The pins stay in the bpffs
# that holds them, and detach there removes them.
unpinned() { unshare -m bash -c "umount /sys/fs/bpf && nsenter --net=/var/run/netns/$NS_R $TBCTL $*"; }
export -f unpinned
export NS_R TBCTL
for mode in xdp tc-ingress; do
	check "$mode: attach" tb attach dev "$DEV_R" mode "$mode"
	id=$(tb -j status dev "$DEV_R" | jq '.[0].prog_id')
	check "$mode, bpffs unmounted: attach refuses, naming tbctl's program $id" \
		bash -c "! unpinned attach dev $DEV_R mode $mode 2>$tmp/err && grep -q \"tbctl's program (id $id, mode $mode) is on the device\" $tmp/err"
	check "$mode, bpffs unmounted: detach removes program $id" \
		bash -c "unpinned detach dev $DEV_R 2>$tmp/err && grep -q \"tbctl's program (id $id, mode $mode) was on the device: removed it\" $tmp/err"
	check "$mode: the program is off the device" [ "$(tb -j status dev "$DEV_R" | jq '.[0].prog_id')" = 0 ]
	check "$mode, bpffs unmounted: a second detach finds nothing" \
		bash -c "! unpinned detach dev $DEV_R 2>$tmp/err && grep -q 'not attached' $tmp/err"
	check "$mode: detach where the pins are removes them" tb detach dev "$DEV_R"
	check "$mode: nothing left" [ ! -e "$(pins $NS_R $DEV_R)" ]
done

# Two devices (two units of tbctl@.service starting at once): the detach
# of the only other device removes the pins' root when it is empty, and
# must not while an attach has made or found it and is yet to pin into
# it. strace holds the attach 3 s just after its mkdir of the root.
run_r strace -f -qq -e trace=mkdir -o "$tmp/mkdirs" "$TBCTL" attach dev "$DEV_R"
at=$(grep -n 'mkdir("/sys/fs/bpf/tbctl",' "$tmp/mkdirs" | head -n 1 | cut -d: -f1)
tb detach dev "$DEV_R"
check "attach makes the pins' root (mkdir number ${at:-none})" [ -n "$at" ]
check "attach $DEV_S" tbs attach dev "$DEV_S"
run_r strace -f -qq -o /dev/null -e trace=mkdir -e inject=mkdir:delay_exit=3000000:when="${at:-1}" \
	"$TBCTL" attach dev "$DEV_R" 2>"$tmp/err" &
held=$!
held_at 83 "$held"
check "detach $DEV_S meanwhile" tbs detach dev "$DEV_S"
check "that detach did not wait for the attach: $DEV_R has no pins yet" [ ! -e "$(pins $NS_R $DEV_R)" ]
wait "$held"
rc=$?
check "the held attach of $DEV_R succeeded (exit $rc: $(head -c 200 "$tmp/err"))" [ "$rc" = 0 ]
check "and $DEV_R is attached, its pins in place" \
	bash -c "[ -e $(pins $NS_R $DEV_R)/buckets ] && [ \"\$(nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq '.[0].attached')\" = true ]"

# status of every device lists them by their pin directories: one that a
# detach removes between the listing and its reading is gone, not broken.
# strace holds status 3 s after it read the directory.
check "attach $DEV_S again" tbs attach dev "$DEV_S"
run_r strace -f -qq -o /dev/null -e trace=getdents64 -e inject=getdents64:delay_exit=3000000:when=1 \
	"$TBCTL" -j status >"$tmp/status" 2>"$tmp/err" &
held=$!
held_at 217 "$held"
check "detach $DEV_S while status is held" tbs detach dev "$DEV_S"
wait "$held"
rc=$?
check "status of every device exits 0 (exit $rc: $(head -c 200 "$tmp/err"))" [ "$rc" = 0 ]
check "it lists $DEV_R, attached, and not $DEV_S: $(head -c 300 "$tmp/status")" \
	jq -e --arg r "$DEV_R" --arg s "$DEV_S" \
	'any(.[]; .dev == $r and .attached) and all(.[]; .dev != $s)' "$tmp/status" >/dev/null
check "detach $DEV_R" tb detach dev "$DEV_R"

# status in the midst of an attach: pins half made are a moment, not an
# error; status waits for the attach's lock and reports the outcome.
# strace holds the attach 2 s just after it pinned its first map.
pin2=$(grep -n "mkdir(\"$(pins $NS_R $DEV_R)\"," "$tmp/mkdirs" | sed -n 2p | cut -d: -f1)
check "attach makes its pin directory, then pins into it (mkdir number ${pin2:-none})" [ -n "$pin2" ]
run_r strace -f -qq -o /dev/null -e trace=mkdir -e inject=mkdir:delay_exit=2000000:when="${pin2:-1}" \
	"$TBCTL" attach dev "$DEV_R" 2>"$tmp/err" &
held=$!
# Seen at the first poll that finds a pin: a check run after the loop
# could come after the hold, on a machine busy with the other lane.
half=none
for ((i = 0; i < 50; i++)); do
	if [ -n "$(ls -A "$(pins $NS_R $DEV_R)" 2>/dev/null)" ]; then
		half=$(ls "$(pins $NS_R $DEV_R)" | xargs)
		break
	fi
	sleep 0.1
done
check "the held attach has pinned a map, not yet its config ($half)" \
	bash -c "[ '$half' != none ] && ! grep -qw config <<<'$half'"
status=$(tb -j status dev "$DEV_R" 2>&1)
rc=$?
check "status meanwhile exits 0 (exit $rc: $(head -c 200 <<<"$status"))" [ "$rc" = 0 ]
check "and reports the attach's outcome: attached" jq -e '.[0].attached' <<<"$status" >/dev/null
wait "$held"
rc=$?
check "the held attach succeeded (exit $rc: $(head -c 200 "$tmp/err"))" [ "$rc" = 0 ]

# An attach interrupted there (made by hand: the program off the device,
# the config pin gone): status waits no longer than 3 s for a lock that
# stays held, and says so; with the lock free it says at once what to do.
ip -n "$NS_R" link set dev "$DEV_R" xdpdrv off
rm "$(pins $NS_R $DEV_R)/config"
(flock -x 9 && sleep 4) 9>"$(lockfile $NS_R $DEV_R)" &
locker=$!
lock_held "$(lockfile $NS_R $DEV_R)"
status=$(tb -j status dev "$DEV_R" 2>&1)
rc=$?
check "with the lock held throughout, status exits 1 (exit $rc)" [ "$rc" = 1 ]
check "and says the lock was held ($status)" grep -q "has held the device's lock for over 3 s, its pins half made" <<<"$status"
wait "$locker"
status=$(tb -j status dev "$DEV_R" 2>&1)
check "with the lock free, status names the interrupted attach ($status)" \
	grep -q "an attach was interrupted while pinning its maps" <<<"$status"
check "attach finishes it" tb attach dev "$DEV_R"
check "detach $DEV_R" tb detach dev "$DEV_R"

# A command loads the one hook program it uses, or none: the verifier
# takes a tenth of a second over each. libbpf's debug log names what it
# skips.
skipped() { grep -q "prog '$1': skipped loading" "$tmp/vv"; }
loaded() { grep -q "prog '$1':" "$tmp/vv" && ! skipped "$1"; }
for mode in xdp tc-ingress; do
	hook=$([[ $mode == xdp ]] && echo tb_xdp || echo tb_tc)
	other=$([[ $mode == xdp ]] && echo tb_tc || echo tb_xdp)
	check "attach $mode" tb -vv attach dev "$DEV_R" mode $mode 2>"$tmp/vv" >/dev/null
	check "attach $mode loads $hook" loaded $hook
	check "and leaves $other out" skipped $other
	check "reset counters" tb -vv reset dev "$DEV_R" counters 2>"$tmp/vv" >/dev/null
	check "reset counters leaves tb_xdp out" skipped tb_xdp
	check "and tb_tc" skipped tb_tc
	check "detach" tb detach dev "$DEV_R"
done

# Given no mode, a fresh attach takes native XDP, and where the device
# has none (a bridge here) tc-ingress, saying so, loading the tc program
# only then. A mode given means that mode alone.
BR=tbb$ID
ip -n "$NS_R" link add "$BR" type bridge && ip -n "$NS_R" link set "$BR" up
check "attach with no mode on the veth: xdp" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -vv attach dev $DEV_R \
	2>$tmp/vv && nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -e '.[0].mode == \"xdp\"' >/dev/null"
check "it left tb_tc out" skipped tb_tc
check "detach" tb detach dev "$DEV_R"
err=$(tb attach dev "$BR" 2>&1)
check "attach with no mode on a bridge (no native XDP): tc-ingress, saying so ($err)" \
	grep -qE "native XDP refused \(.*\); attached in mode tc-ingress through (tcx|clsact)" <<<"$err"
check "status says mode tc-ingress" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $BR | jq -e '.[0].mode == \"tc-ingress\" and .[0].attached' >/dev/null"
check "detach" tb detach dev "$BR"
err=$(tb attach dev "$BR" mode xdp 2>&1)
check "mode xdp there is refused, naming why ($err)" grep -qF "the driver has no native XDP (try mode xdpgeneric)" <<<"$err"
check "and leaves no pins" [ ! -e "$(pins $NS_R $BR)" ]
summary
