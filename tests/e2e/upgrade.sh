#!/usr/bin/env bash
# Upgrades under traffic from the layout before this one, built from this
# repository's history (tests/older.sh), and to the next one, built from
# this tree as a fixture (-DTB_FIXTURE_NEXT_LAYOUT), whose shared buckets
# and global counters grew, so that they are merged once the swap has
# settled while both programs share the table. For each: the older build
# attaches and sets rules; the newer build's other commands refuse the
# older pins; its attach upgrades them while sources send at twice their
# caps. They stay within b + r*T across the upgrade, their counters and
# the rules carry on, the program on the device uses the maps that are
# pinned, and nothing is left aside. Then the upgrade is killed at a
# sample of its kill points (kill_points: bpf() calls, the membarrier,
# each rename that moves a map), one from every phase, drawn from TB_SEED
# (all of them under TB_FULL=1): the next attach finishes it (or does it
# again), with the rules intact and the datapath on the pinned maps.
# Pins two layouts old are refused, by every command, with what to do;
# attach ... replace starts over on them with their rules. Last, a device
# deleted and made again: one attach takes its pins over and upgrades
# them.
. "$(dirname "$0")/lib.bash"
setup

# This build's layout: the last definition (the first is the fixture's).
LAYOUT=$(awk '$1 == "#define" && $2 == "TB_LAYOUT" { v = $3 } END { print v }' "$ROOT/bpf/abi/tb_abi.h")
# Where this build keeps the device's pins, and where the older builds
# kept them, by the name alone (attach takes them over).
PINS=$(pins "$NS_R" "$DEV_R")
OLD_PINS=/sys/fs/bpf/tbctl/$DEV_R
SECS=4
RATE=1000000    # bytes/s: 8mbit
BURST=16384
PAYLOAD=500
FRAME=$((PAYLOAD + 42))
# pins_of TBCTL: where that build pins the device: by the name alone
# before this one.
pins_of() { if [[ $1 == "$TBCTL" || $1 == "$B/next/tbctl" ]]; then echo "$PINS"; else echo "$OLD_PINS"; fi; }
# rules: what both builds list, in one comparable form.
rules() { "$@" -j rule list dev "$DEV_R" | jq -cS 'sort_by(.prefix)'; }
# The program on the device uses the pinned maps (not ones a rename missed).
on_pins() {
	local id prog missed
	id=$(prog_id tnew) && prog=$(bpftool -j prog show id "$id") || return 1
	# Every map with its pins (-f), in one call; the names of those the
	# program does not use.
	missed=$(bpftool -j -f map show | jq -r --argjson prog "$prog" --arg dir "$PINS/" '
		(map(select(.pinned) | {id, pin: .pinned[]})) as $pins
		| ["buckets", "rules", "prefixes_v4", "config", "owed", "denycache", "flushseq"][]
		| . as $m | [$pins[] | select(.pin == $dir + $m) | .id][0]
		| select(. as $id | $id == null or ($prog.map_ids | index($id)) == null) | $m') || return 1
	[[ -z $missed ]] || { echo "the program does not use the pinned" $missed; return 1; }
}
nothing_aside() { ! ls "$PINS" | grep -q ':pending'; }
# The names pinned for the device, sorted, on one line.
pins_here() {
	local f
	for f in "$PINS"/*; do echo "${f##*/}"; done | sort | xargs
}
# The pins are this tree's maps (the fixture's are the same), no others.
only_this_layout() {
	[[ "$(pins_here)" == "$(awk -F'[(,]' '/^#define TB_MAPS\(X\)/ { on = 1; next } on && $1 == "\tX" { print $2 } on && !/\\$/ { on = 0 }' \
		"$ROOT/bpf/abi/tb_abi.h" | sort | xargs)" ]]
}
consistent() { on_pins && nothing_aside; }

# The shared prefix's source sends too, and the older build's rules.
SHARED_SRC=198.18.32.10
ip -n "$NS_S" addr add "$SHARED_SRC/16" dev "$DEV_S"
netns_neigh "$NS_R" "$DEV_R" "$NS_S" "$DEV_S" "$SHARED_SRC"
SHARED_RATE=250000      # 2mbit, and its default burst of 1 s
# Attached, and nothing of an upgrade left for the next attach to do
# (what is left aside shows in nothing_aside).
finished() {
	tnew -j status dev "$DEV_R" | jq -e '.[0] | .attached and (has("error") | not)' >/dev/null
}
# Before a kill: 20 datagrams from a capped source, 20 from one whose
# rule's burst sets aside credit for 30 of them (the last 19 admitted
# without the lock) and 20 from the shared prefix, all within their
# bursts; after it, each counted exactly once.
CREDIT_SRC=198.18.0.11
counted() {
	local src

	for src in 198.18.0.10 $CREDIT_SRC "$SHARED_SRC"; do
		in_s "$TBGEN" send --src "$src" --dst 198.18.0.2 --port 9001 --size $PAYLOAD --count 20 \
			--pps 2000 >/dev/null || return 1
	done
}
carried() {
	local got
	got=$(tnew -j show dev "$DEV_R" | jq -c --arg c $CREDIT_SRC \
		'. as $all | ["198.18.0.10", $c, "198.18.32.0/24"] | map(. as $a | [$all[] | select(.address == $a)][0].passed_packets)')
	[[ $got == "[20,20,20]" ]] || { echo "passed $got, not 20 each"; return 1; }
}

# upgrade FROM OLD_TBCTL TO NEW_TBCTL
upgrade() {
	local from=$1 old=$2 to=$3 new=$4 before got code calls taken bad k sgot sbound spassed placed placement
	told() { run_r "$old" "$@"; }
	tnew() { run_r "$new" "$@"; }
	local rule_args=("default rate 8mbit burst 16k early off" "198.18.0.16/28 rate 4mbit burst 8k"
		"$CREDIT_SRC/32 rate 8mbit burst 1024k" "198.18.32.0/24 rate 2mbit scope shared"
		"2001:db8::/64 rate 1mbit action monitor")
	old_rules() {
		local r
		for r in "${rule_args[@]}"; do
			told rule set dev "$DEV_R" $r || return 1
		done
	}
	# Attach and the rules in one run of the older build, before each kill.
	old_setup() {
		{ echo "attach dev $DEV_R mode xdp"; printf "rule set dev $DEV_R %s\n" "${rule_args[@]}"; } |
			told -batch - 2>"$tmp/setup.err" && return 0
		cat "$tmp/setup.err" >&2
		return 1
	}
	check "layout $from attaches" told attach dev "$DEV_R" mode xdp
	check "layout $from sets rules" old_rules
	# Bans came with layout 16: one by hand, kept across the upgrade.
	((from >= 16)) && check "layout $from bans a prefix" told ban add dev "$DEV_R" 198.18.77.0/24 for 1h
	before=$(rules told)
	check "layout $to refuses to read layout $from's pins, and says how to upgrade" \
		bash -c "! nsenter --net=/var/run/netns/$NS_R $new rule list dev $DEV_R 2>$tmp/err && grep -q 'older tbctl build.*layout $from.*attach dev $DEV_R upgrades' $tmp/err"
	check "status names the device as needing the upgrade" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $new -j status dev $DEV_R | jq -e '.[0].error | test(\"older tbctl build\")' >/dev/null"

	in_r "$TBGEN" recv --port 9001 --seconds $RECV_LIMIT --idle 1 >"$tmp/recv" &
	local recv=$!
	listening "$NS_R" udp 9001
	# Twice the caps in 500-byte datagrams; the upgrade lands mid-run.
	in_s "$TBGEN" send --src 198.18.0.10 --dst 198.18.0.2 --port 9001 --size $PAYLOAD --pps 4000 \
		--seconds "$SECS" >"$tmp/sent" &
	local send=$!
	in_s "$TBGEN" send --src "$SHARED_SRC" --dst 198.18.0.2 --port 9001 --size $PAYLOAD --pps 1000 \
		--seconds "$SECS" >"$tmp/sent_shared" &
	local send_shared=$!
	policing 198.18.0.10 told
	# The older pins' placement (a config before layout 13 calls it stripes).
	placed=$(bpftool -j map lookup pinned "$(pins_of "$old")/config" key 0 0 0 0 |
		jq -r '.formatted.value | if (.place // .stripes) == 2 then "siphash" else "mix" end')
	tnew attach dev "$DEV_R" 2>"$tmp/upgrade"
	code=$?
	wait "$send" "$send_shared"
	wait "$recv"
	check "attach upgrades layout $from to $to under traffic (exit $code: $(cat "$tmp/upgrade"))" \
		bash -c "[ $code = 0 ] && grep -q 'upgraded the pinned maps from layout $from to $to' $tmp/upgrade"
	check "the rules are the same after the upgrade" [ "$(rules tnew)" = "$before" ]
	((from >= 16)) && check "so is the ban" bash -c "nsenter --net=/var/run/netns/$NS_R $new ban list dev $DEV_R |
		grep -q '^198.18.77.0/24 .* manual .* 3[0-9]\{3\}\.[0-9]\{3\}s$'"
	check "the program on the device uses the pinned maps, and no pin is left aside" consistent
	check "the upgraded device has owed[] and a healthy status" \
		bash -c "[ -e $PINS/owed ] && nsenter --net=/var/run/netns/$NS_R $new -j status dev $DEV_R | jq -e '.[0].attached and .[0].prog_id > 0' >/dev/null"

	# Across the upgrade (a fresh bucket would add a burst).
	capped 198.18.0.10 "$tmp/recv" "$tmp/sent" $RATE $BURST $FRAME 3000 tnew
	got=$CAPPED_GOT
	sgot=$(awk -v a="$SHARED_SRC" '$1 == a { print $2 }' "$tmp/recv")
	sbound=$(window_bound "$tmp/sent_shared" $SHARED_RATE $SHARED_RATE $FRAME)
	check "the shared prefix admitted $((${sgot:-0} * FRAME)) bytes <= b + r*T = $sbound across the upgrade" \
		[ "${sgot:-0}" -gt 1000 -a "$((${sgot:-0} * FRAME))" -le "$sbound" ]
	spassed=$(tnew -j show dev "$DEV_R" | jq '[.[] | select(.address == "198.18.32.0/24")][0].passed_packets')
	check "its shared bucket's counters carried on: $spassed passed of ${sgot:-0} received" [ "${spassed:-0}" -ge "${sgot:-0}" ]
	check "the global counters carried on" \
		[ "$(tnew -j stats dev "$DEV_R" | jq .passed_packets)" -ge "$((${got:-0} + ${sgot:-0}))" ]
	check "only the pins of layout $to are left: $(pins_here)" only_this_layout
	placement=$(tnew -j status dev "$DEV_R" | jq -r '.[0].placement')
	check "the table is placed by SipHash now (layout $from's: $placed), taken over if it was not" \
		[ "$placement" = siphash ]
	check "attach again says nothing of an upgrade" [ -z "$(tnew attach dev "$DEV_R" 2>&1)" ]
	check "detach" tnew detach dev "$DEV_R"

	# Killed at a sample of its kill points (kill_points: bpf() calls, the
	# membarrier and each rename that moves a map), one from every phase.
	old_setup
	run_r strace -f -qq -e trace=bpf,rename,membarrier,sendto -o "$tmp/trace" "$new" attach dev "$DEV_R" \
		>/dev/null 2>&1
	calls=$(grep -c '^[0-9]* *bpf(' "$tmp/trace")
	renames=$(grep -c '^[0-9]* *rename(' "$tmp/trace")
	taken=$(grep -cE '^[0-9]* *rename\(.*:[0-9]+"\) = 0$' "$tmp/trace")
	kill_points "$tmp/trace" >"$tmp/points"
	phases=$(awk '{ sub(/\/.*/, "", $1); if (!seen[$1]++) printf "%s%s", s, $1; s = " " }' "$tmp/points")
	kills=$(sample "upgrade from $from" 1 coarse <"$tmp/points" | xargs)
	check "an upgrade from layout $from makes $calls bpf() calls and $renames renames: $(wc -l <"$tmp/points") kill points in the phases $phases" \
		[ "$calls" -gt 20 -a "$(wc -l <"$tmp/points")" -gt 5 ]
	bad=0
	for k in $kills; do
		local call=bpf when=$k
		case $k in
		r*) call=rename when=${k#r} ;;
		m*) call=membarrier when=${k#m} ;;
		esac
		tnew detach dev "$DEV_R" >/dev/null 2>&1
		old_setup && counted || { bad=1; echo "layout $from setup failed before kill $k"; }
		run_r strace -f -qq -o /dev/null -e trace=$call -e inject=$call:signal=SIGKILL:when=$when \
			"$new" attach dev "$DEV_R" >/dev/null 2>&1
		tnew attach dev "$DEV_R" >/dev/null 2>&1 || { bad=1; echo "kill at $call $when: attach again failed"; }
		[[ $(rules tnew 2>/dev/null) == "$before" ]] || { bad=1; echo "kill at $call $when: rules now $(rules tnew 2>&1)"; }
		finished || { bad=1; echo "kill at $call $when: not finished"; }
		consistent || { bad=1; echo "kill at $call $when: pins and program disagree"; }
		carried || { bad=1; echo "kill at $call $when: counters not carried exactly once"; }
	done
	check "upgrade from layout $from killed at $kills (seed $TB_SEED): the next attach finishes it, rules intact, the program on the pinned maps, counters carried exactly once" [ "$bad" = 0 ]
	# Killed after the swap, at the first rename of a map, after the
	# takeover's of older pins (the buckets' may be the only one pending):
	# detach removes it all. An upgrade that only adds maps renames nothing.
	tnew detach dev "$DEV_R" >/dev/null 2>&1
	old_setup
	if ((renames > taken)); then
		run_r strace -f -qq -o /dev/null -e trace=rename -e inject=rename:signal=SIGKILL:when=$((taken + 1)) \
			"$new" attach dev "$DEV_R" >/dev/null 2>&1
		check "a kill between the swap and the renames leaves the new maps pinned aside" \
			bash -c "ls $PINS | grep -q ':pending'"
	else
		check "an upgrade from layout $from with $renames renames: nothing is made aside" \
			bash -c "nsenter --net=/var/run/netns/$NS_R $new attach dev $DEV_R >/dev/null 2>&1 && ! ls $PINS | grep -q ':pending'"
	fi
	check "detach then removes the program and every pin, those aside too" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $new detach dev $DEV_R && [ ! -e $PINS ] && [ ! -e $OLD_PINS ] &&
			! ip -n $NS_R link show dev $DEV_R | grep -q prog/xdp"
}

# The older builds (tests/older.sh), made in turn from the start, so that
# each is ready by the time the upgrades before it end: by tests/run.sh
# in TB_OLDER_DIR, or here.
older=${TB_OLDER_DIR:-}
if [[ -z $older ]]; then
	older=$tmp/older
	"$ROOT/tests/older.sh" "$older" &
	builder=$!
	# Ended before the scratch directory goes (it ends once its make does).
	session_cleanup() { kill "$builder" 2>/dev/null; wait "$builder"; }
fi
# older_build LAYOUT: tests/older.sh's build of that layout, once made.
older_build() {
	local old=$older/v$1 commit
	commit=$("$ROOT/tests/older.sh" --list | awk -F: -v l="$1" '$1 == l { print $2 }')
	while [[ ! -s $old.built ]]; do sleep 0.1; done
	check "a layout-$1 build, $commit, is in this repository's history" [ "$(cat "$old.built")" != archive ]
	[[ $(cat "$old.built") == make ]] && tail -n 20 "$old.log"
	check "it builds" [ "$(cat "$old.built")" = ok ]
}

older_build $((LAYOUT - 1))
upgrade $((LAYOUT - 1)) "$older/v$((LAYOUT - 1))/build/tbctl" "$LAYOUT" "$TBCTL"
check "the fixture of the next layout builds" make -s -C "$ROOT" BUILD="$B" fixture
upgrade "$LAYOUT" "$TBCTL" $((LAYOUT + 1)) "$B/next/tbctl"

# replace_from FROM OLD_TBCTL: pins two layouts old are refused by every
# command, attach included, with what to do, and changed by none; attach
# ... replace starts over on them, with their rules, mode and table size.
replace_from() {
	local from=$1 old=$2 before out code cmd words
	told() { run_r "$old" "$@"; }
	tnew() { run_r "$TBCTL" "$@"; }
	check "layout $from attaches and sets rules" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $old -batch - <<<'attach dev $DEV_R mode xdpgeneric max-addrs 4096
rule set dev $DEV_R default rate 8mbit burst 16k
rule set dev $DEV_R 198.18.0.16/28 rate 1000pps burst 20 cost packets
rule set dev $DEV_R 198.18.32.0/24 rate 2mbit scope shared
rule set dev $DEV_R 2001:db8::/64 rate 1mbit action monitor'"
	sends() { in_s "$TBGEN" send --src 198.18.0.10 --dst 198.18.0.2 --port 9001 --size $PAYLOAD --count 10 \
		--pps 1000 >/dev/null; }
	check "a source sends to it" sends
	before=$(rules told)
	for cmd in "rule list" "show" "stats" "reset counters"; do
		read -ra words <<<"$cmd"
		out=$(tnew "${words[@]}" dev "$DEV_R" 2>&1)
		code=$?
		check "$cmd refuses layout $from's pins (exit $code), naming both ways out: $out" \
			bash -c "[ $code != 0 ] && grep -q 'detach with the build that made them, or tbctl attach dev $DEV_R replace' <<<\"\$1\"" _ "$out"
	done
	check "status names the device as too old to upgrade" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -e '.[0].error | test(\"attach dev $DEV_R replace\")' >/dev/null"
	out=$(tnew attach dev "$DEV_R" 2>&1)
	code=$?
	check "attach refuses them (exit $code), naming both ways out: $out" \
		bash -c "[ $code != 0 ] && grep -q 'upgrades only layout $((LAYOUT - 1))' <<<\"\$1\"" _ "$out"
	check "and changed nothing: layout $from's build still reads its rules and counters" \
		bash -c "[ \"\$1\" = \"\$2\" ] && [ \"\$(nsenter --net=/var/run/netns/$NS_R $old -j stats dev $DEV_R | jq .passed_packets)\" -gt 0 ]" \
		_ "$(rules told)" "$before"
	out=$(tnew attach dev "$DEV_R" replace qdisc fq 2>&1)
	code=$?
	check "attach replace with options that cannot work (exit $code: $out) removes nothing" \
		bash -c "[ $code != 0 ] && [ \"\$1\" = \"\$2\" ] && ! grep -q 'rules were' <<<\"\$3\"" _ "$(rules told)" "$before" "$out"
	check "attach dev replace starts over" tnew attach dev "$DEV_R" replace
	check "the rules are the same after it" [ "$(rules tnew)" = "$before" ]
	check "the counters are not" [ "$(tnew -j stats dev "$DEV_R" | jq .passed_packets)" = 0 ]
	check "placed by SipHash now" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -e '.[0].placement == \"siphash\"' >/dev/null"
	check "mode and table size kept" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -e '.[0].mode == \"xdpgeneric\" and .[0].max_addrs == 4096' >/dev/null"
	check "the program on the device uses the pinned maps" consistent
	check "only the pins of layout $LAYOUT are there: $(pins_here)" only_this_layout
	check "the device polices again" sends
	check "and counts" [ "$(tnew -j stats dev "$DEV_R" | jq .passed_packets)" -gt 0 ]

	# A replace that fails once it has begun removing the old pins (the
	# removal of their directory made to fail) prints what the rules were,
	# as lines that set them again.
	before=$(rules tnew)
	out=$(run_r strace -f -qq -o /dev/null -e trace=rmdir -e inject=rmdir:error=EIO "$TBCTL" attach dev "$DEV_R" \
		replace 2>&1)
	code=$?
	check "a replace whose removal of the old pins fails (exit $code) prints their rules" \
		bash -c "[ $code != 0 ] && grep -q 'did not finish; the old pins. rules were:' <<<\"\$1\"" _ "$out"
	grep '^rule set ' <<<"$out" >"$tmp/kept"
	check "those $(wc -l <"$tmp/kept") lines set them again on a fresh attach" \
		bash -c "{ echo 'attach dev $DEV_R mode xdpgeneric'; cat $tmp/kept; } |
			nsenter --net=/var/run/netns/$NS_R $TBCTL -batch -"
	check "the same rules" [ "$(rules tnew)" = "$before" ]
	check "detach" tnew detach dev "$DEV_R"
}
older_build $((LAYOUT - 2))
replace_from $((LAYOUT - 2)) "$older/v$((LAYOUT - 2))/build/tbctl"

# adopt_upgrade FROM OLD_TBCTL: the older build's device is deleted and
# made again under its name (a veth or tunnel brought up anew); this
# build's attach takes the pins over and upgrades them, in one run.
adopt_upgrade() {
	local from=$1 old=$2 before code
	told() { run_r "$old" "$@"; }
	tnew() { run_r "$TBCTL" "$@"; }
	check "layout $from attaches and sets rules" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $old -batch - <<<'attach dev $DEV_R mode xdp
rule set dev $DEV_R default rate 8mbit burst 16k
rule set dev $DEV_R 198.18.0.16/28 rate 4mbit burst 8k'"
	before=$(rules told)
	ip -n "$NS_R" link del "$DEV_R"
	ip link add "$DEV_S" netns "$NS_S" type veth peer name "$DEV_R" netns "$NS_R"
	ip -n "$NS_S" link set "$DEV_S" up
	ip -n "$NS_R" link set "$DEV_R" up
	tnew attach dev "$DEV_R" 2>"$tmp/adopt"
	code=$?
	check "attach takes the pins of the device made again over and upgrades them from layout $from (exit $code: $(tr '\n' ' ' <"$tmp/adopt"))" \
		bash -c "[ $code = 0 ] && grep -q 'the device was made again' $tmp/adopt &&
			grep -q 'upgraded the pinned maps from layout $from to $LAYOUT' $tmp/adopt"
	check "the rules are the same after it" [ "$(rules tnew)" = "$before" ]
	check "the program on the new device uses the pinned maps, and no pin is left aside" consistent
	check "status: attached, to the device here" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -e '.[0].attached and .[0].device == \"here\"' >/dev/null"
	check "detach" tnew detach dev "$DEV_R"
}
adopt_upgrade $((LAYOUT - 1)) "$older/v$((LAYOUT - 1))/build/tbctl"
summary
