#!/usr/bin/env bash
# An upgrade under traffic: the previous release (layout 1, built from this
# repository's history) attaches and sets rules; this build's attach then
# upgrades the pins in place while a source sends at twice its cap. The
# source stays within b + r*T across the upgrade, its counters and the
# rules carry on, and no other command touches the old pins before. Then
# the upgrade is killed at each of its bpf() calls: the next attach
# finishes it, with the rules intact.
. "$(dirname "$0")/lib.bash"
setup

V1_COMMIT=4cd9fe4       # the last release of layout 1
V1=$tmp/v1
run_r() { nsenter --net=/var/run/netns/"$NS_R" "$@"; }
tb1() { run_r "$V1/build/tbctl" "$@"; }

mkdir -p "$V1"
check "the layout-1 release $V1_COMMIT is in this repository's history" \
	bash -c "git -C '$ROOT' archive $V1_COMMIT | tar -x -C '$V1'"
check "it builds" make -s -C "$V1" build/tbctl

SECS=6
RATE=1000000    # bytes/s: 8mbit
BURST=16384
PAYLOAD=500
FRAME=$((PAYLOAD + 42))
# rules: what both builds list, in one comparable form.
rules() { "$@" -j rule list dev "$DEV_R" | jq -cS 'sort_by(.prefix)'; }
# v1_rules: the layout-1 release's rules, set afresh.
v1_rules() {
	tb1 rule set dev "$DEV_R" default rate 8mbit burst 16k early off &&
		tb1 rule set dev "$DEV_R" 198.18.0.16/28 rate 4mbit burst 8k &&
		tb1 rule set dev "$DEV_R" 198.18.32.0/24 rate 2mbit scope shared &&
		tb1 rule set dev "$DEV_R" 2001:db8::/64 rate 1mbit action monitor
}

check "layout 1 attaches" tb1 attach dev "$DEV_R" mode xdp
check "layout 1 sets rules" v1_rules
before=$(rules tb1)
check "this build refuses to read the older pins, and says how to upgrade" \
	bash -c "! nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R 2>$tmp/err && grep -q 'older tbctl build.*layout 1.*attach dev $DEV_R upgrades' $tmp/err"
check "status names the device as needing the upgrade" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -e '.[0].error | test(\"older tbctl build\")' >/dev/null"

in_r "$TBGEN" recv --port 9001 --seconds $((SECS + 2)) >"$tmp/recv" &
recv=$!
sleep 0.5
# Twice the cap in 500-byte datagrams; the upgrade lands mid-run.
in_s "$TBGEN" send --src 198.18.0.10 --dst 198.18.0.2 --port 9001 --size $PAYLOAD --pps 4000 \
	--seconds "$SECS" >"$tmp/sent" &
send=$!
sleep 2.5
tb attach dev "$DEV_R" 2>"$tmp/upgrade"
code=$?
wait "$send"
wait "$recv"
check "attach upgrades the pins in place under traffic (exit $code: $(cat "$tmp/upgrade"))" \
	bash -c "[ $code = 0 ] && grep -q 'upgraded the pinned maps from layout 1 to 2' $tmp/upgrade"
check "the rules are the same after the upgrade" [ "$(rules tb)" = "$before" ]
check "the upgraded device has owed[] and a healthy status" \
	bash -c "[ -e /sys/fs/bpf/tbctl/$DEV_R/owed ] && nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -e '.[0].attached and .[0].prog_id > 0' >/dev/null"

got=$(awk '$1 == "198.18.0.10" { print $2 }' "$tmp/recv")
bound=$(window_bound "$tmp/sent" $RATE $BURST $FRAME)
check "the capped source got ${got:-0} datagrams through" [ "${got:-0}" -gt 5000 ]
check "across the upgrade it admitted $((${got:-0} * FRAME)) bytes <= b + r*T = $bound (a fresh bucket would add a burst)" \
	[ "$((${got:-0} * FRAME))" -le "$bound" ]
passed=$(show_field 198.18.0.10 passed_packets)
check "its bucket's counters carried on: $passed passed of ${got:-0} received" [ "${passed:-0}" -ge "${got:-0}" ]
check "the global counters carried on" [ "$(tb -j stats dev "$DEV_R" | jq .passed_packets)" -ge "${got:-0}" ]
check "attach again says nothing of an upgrade" [ -z "$(tb attach dev "$DEV_R" 2>&1)" ]
check "detach" tb detach dev "$DEV_R"

# Killed at each bpf() call of the upgrade: the next attach finishes it.
tb1 attach dev "$DEV_R" mode xdp && v1_rules
calls=$(run_r strace -f -qq -e trace=bpf -o /dev/stdout "$TBCTL" attach dev "$DEV_R" 2>/dev/null | grep -c '^[0-9]* *bpf(')
check "an upgrade makes $calls bpf() calls" [ "$calls" -gt 20 ]
bad=0
for ((k = 1; k <= calls + 1; k += 2)); do
	tb detach dev "$DEV_R" >/dev/null 2>&1
	tb1 attach dev "$DEV_R" mode xdp && v1_rules || { bad=1; echo "layout 1 setup failed before kill $k"; }
	run_r strace -f -qq -o /dev/null -e trace=bpf -e inject=bpf:signal=SIGKILL:when=$k \
		"$TBCTL" attach dev "$DEV_R" >/dev/null 2>&1
	tb attach dev "$DEV_R" >/dev/null 2>&1 || { bad=1; echo "kill at upgrade call $k: attach again failed"; }
	[[ $(rules tb 2>/dev/null) == "$before" ]] || { bad=1; echo "kill at upgrade call $k: rules now $(rules tb 2>&1)"; }
	[[ $(run_r "$TBCTL" attach dev "$DEV_R" 2>&1) == "" ]] || { bad=1; echo "kill at upgrade call $k: not finished"; }
done
check "upgrade killed at every other of its $calls bpf() calls: the next attach finishes it, rules intact" [ "$bad" = 0 ]
tb detach dev "$DEV_R" >/dev/null 2>&1
summary
