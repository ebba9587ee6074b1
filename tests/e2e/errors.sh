#!/usr/bin/env bash
# Every failure says what was attempted and why, exits 1 (2 for usage),
# and leaves what was configured untouched.
. "$(dirname "$0")/lib.bash"
session_cleanup() { rm -rf /sys/fs/bpf/tbctl/tby"$ID":*; rm -f /run/tbctl/tb[xy]"$ID":*.lock; }
setup
chmod 755 "$tmp"   # the not-root case runs a copy of tbctl from here

check "attach" tb attach dev "$DEV_R" mode xdp
check "default rule" tb rule set dev "$DEV_R" default rate 2mbit burst 20000
check "prefix rule" tb rule set dev "$DEV_R" 198.18.4.0/24 rate 1mbit
ip -n "$NS_R" link add "tbx$ID" type veth peer name "tbxp$ID"
ip -n "$NS_R" link add "tby$ID" type veth peer name "tbyp$ID"

state() { tb -j rule list dev "$DEV_R"; tb -j status dev "$DEV_R" | jq -c 'if type == "array" then map(del(.addresses)) else . end'; ls /sys/fs/bpf/tbctl | grep -F "$ID:"; }
snap=$(state)

# expect_fail CODE PATTERN ARGS...
expect_fail() {
	local code=$1 pat=$2 err rc
	shift 2
	err=$(tb "$@" 2>&1 >/dev/null)
	rc=$?
	check "tbctl $*: exit $code (got $rc)" [ "$rc" = "$code" ]
	check "tbctl $*: says '$pat' (said: $err)" grep -qF -- "$pat" <<<"$err"
	check "tbctl $*: state unchanged" [ "$(state)" = "$snap" ]
}

expect_fail 2 'unknown command "frobnicate"' frobnicate
expect_fail 2 'ambiguous command "s": status, show, stats' s dev "$DEV_R"
expect_fail 2 'unknown keyword "colour"' rule set dev "$DEV_R" default rate 1mbit colour red
expect_fail 2 'keyword "rate" given twice' rule set dev "$DEV_R" default rate 1mbit rate 2mbit
expect_fail 2 'keyword "burst" needs a value' rule set dev "$DEV_R" default rate 1mbit burst
expect_fail 2 'unknown unit "mbitz"' rule set dev "$DEV_R" default rate 10mbitz
expect_fail 2 'invalid rate "-5mbit"' rule set dev "$DEV_R" default rate -5mbit
expect_fail 2 'rate "0" is zero' rule set dev "$DEV_R" default rate 0
expect_fail 2 'rate "99999999tbit" is too large' rule set dev "$DEV_R" default rate 99999999tbit
expect_fail 2 'invalid burst "10kk"' rule set dev "$DEV_R" default rate 1mbit burst 10kk
expect_fail 2 'burst 1000 is below 1500 bytes' rule set dev "$DEV_R" default rate 1mbit burst 1000
expect_fail 2 'missing "rate RATE"' rule set dev "$DEV_R" default
expect_fail 2 'invalid prefix length in "198.18.1.0/ 24"' rule set dev "$DEV_R" "198.18.1.0/ 24" rate 1mbit
expect_fail 2 'invalid prefix length in "198.18.1.0/+24"' rule set dev "$DEV_R" "198.18.1.0/+24" rate 1mbit
expect_fail 2 '"::ffff:198.18.0.0/112" is IPv4-mapped' rule set dev "$DEV_R" ::ffff:198.18.0.0/112 rate 1mbit
expect_fail 2 'invalid device name ""' rule set dev "" default rate 1mbit
expect_fail 2 'horizon applies to action shape only' rule set dev "$DEV_R" default rate 1mbit horizon 10ms
expect_fail 2 'early applies to action drop and mark only' rule set dev "$DEV_R" default rate 1mbit action monitor early off
expect_fail 2 'action pass takes no "rate"' rule set dev "$DEV_R" 198.18.0.0/24 rate 1mbit action pass
expect_fail 2 'action pass takes no "scope"' rule set dev "$DEV_R" 198.18.0.0/24 action pass scope shared
expect_fail 2 'invalid early "maybe"' rule set dev "$DEV_R" default rate 1mbit early maybe
expect_fail 2 'invalid horizon "10 parsecs"' rule set dev "$DEV_R" default rate 1mbit action shape horizon "10 parsecs"
expect_fail 2 'horizon "11s" is too large' rule set dev "$DEV_R" default rate 1mbit action shape horizon 11s
expect_fail 1 'action shape needs mode tc-egress (attached as xdp)' rule set dev "$DEV_R" default rate 1mbit action shape
expect_fail 1 'qdisc fq paces egress: it needs mode tc-egress' attach dev "tbx$ID" mode tc-ingress qdisc fq
expect_fail 2 'invalid qdisc "pfifo"' attach dev "tbx$ID" mode tc-egress qdisc pfifo
ip netns exec "$NS_R" tc qdisc add dev "tbx$ID" root tbf rate 1mbit burst 10k latency 50ms
expect_fail 1 'the root qdisc is tbf, which tbctl does not replace' attach dev "tbx$ID" mode tc-egress qdisc fq
check "the operator's tbf is still the root" bash -c "ip netns exec $NS_R tc qdisc show dev tbx$ID root | grep -q '^qdisc tbf '"
ip netns exec "$NS_R" tc qdisc del dev "tbx$ID" root
# This machine's kernel has no sch_fq (Debian's does: tests/vm/e2e/shape.sh).
if ! modprobe -n -q sch_fq 2>/dev/null; then
	expect_fail 1 'install fq as the root qdisc: this kernel has no fq qdisc (sch_fq)' \
		attach dev "tbx$ID" mode tc-egress qdisc fq
else
	check "attach qdisc fq where the kernel has fq" tb attach dev "tbx$ID" mode tc-egress qdisc fq
	check "detach" tb detach dev "tbx$ID"
fi
expect_fail 2 'invalid prefix length in "198.18.0.0/33"' rule set dev "$DEV_R" 198.18.0.0/33 rate 1mbit
expect_fail 2 'invalid address "198.18.0"' rule set dev "$DEV_R" 198.18.0/24 rate 1mbit
expect_fail 2 'invalid mode "foo"' attach dev "$DEV_R" mode foo
expect_fail 2 'invalid max-addrs "12x"' attach dev "$DEV_R" max-addrs 12x
expect_fail 2 'invalid top "0" (a whole number' show dev "$DEV_R" top 0
expect_fail 2 'invalid sort "size"' show dev "$DEV_R" sort size
expect_fail 2 'missing "dev DEV"' stats
expect_fail 1 'attach dev tbnosuch0: no such device' attach dev tbnosuch0
expect_fail 1 "rule set dev tbx$ID: not attached" rule set dev "tbx$ID" default rate 1mbit
expect_fail 1 "show dev tbx$ID: not attached" show dev "tbx$ID"
expect_fail 1 "detach dev tbx$ID: not attached" detach dev "tbx$ID"
expect_fail 1 "rule del dev $DEV_R: no rule for 198.18.9.0/24" rule del dev "$DEV_R" 198.18.9.0/24
expect_fail 1 "attached as mode xdp key src, not mode tc-ingress key src; detach first" attach dev "$DEV_R" mode tc-ingress
expect_fail 1 "the pinned table holds max-addrs 65536" attach dev "$DEV_R" max-addrs 2048

check "unique prefixes run: 'sh', 'ru li'" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL sh dev $DEV_R >/dev/null && nsenter --net=/var/run/netns/$NS_R $TBCTL ru li dev $DEV_R >/dev/null"

# Host bits: normalised with a warning.
err=$(tb rule set dev "$DEV_R" 198.18.5.7/24 rate 1mbit 2>&1)
check "host bits: warns ($err)" grep -qF 'has host bits set, using 198.18.5.0/24' <<<"$err"
check "host bits: rule stored as 198.18.5.0/24" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -q '^198.18.5.0/24 '"
check "host bits: delete restores the rules" tb rule del dev "$DEV_R" 198.18.5.0/24
check "state back to the snapshot" [ "$(state)" = "$snap" ]

# -j errors are JSON on stdout.
js=$(tb -j rule set dev "$DEV_R" default rate 10mbitz 2>/dev/null)
rc=$?
check "-j error: exit 2 (got $rc)" [ "$rc" = 2 ]
check "-j error: JSON on stdout ($js)" bash -c "jq -e '.error | contains(\"unknown unit\")' <<<'$js' >/dev/null"

# Not root, and no capability.
cp "$TBCTL" "$tmp/tbctl"
err=$(nsenter --net=/var/run/netns/"$NS_R" setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$tmp/tbctl" stats dev "$DEV_R" 2>&1)
rc=$?
check "not root: exit 1 (got $rc)" [ "$rc" = 1 ]
check "not root: says which capability it lacks ($err)" grep -qF "stats dev $DEV_R: permission denied: it needs CAP_BPF; this process lacks CAP_BPF" <<<"$err"

# bpffs unavailable: a private mount namespace where /sys/fs/bpf is gone.
err=$(unshare -m bash -c "mount -t tmpfs none /sys/fs && exec nsenter --net=/var/run/netns/$NS_R $TBCTL stats dev $DEV_R" 2>&1)
rc=$?
check "bpffs unavailable: exit 1 (got $rc)" [ "$rc" = 1 ]
check "bpffs unavailable: says so ($err)" grep -qF "stats dev $DEV_R: bpffs unavailable at /sys/fs/bpf" <<<"$err"
check "state unchanged" [ "$(state)" = "$snap" ]

# The kernel refusing the load: a pinned map of another layout in the way.
tby=$(pins "$NS_R" "tby$ID")
mkdir -p "$tby"
bpftool map create "$tby/buckets" type hash key 16 value 8 entries 16 name buckets
err=$(tb attach dev "tby$ID" 2>&1)
rc=$?
check "refused load: exit 1 (got $rc)" [ "$rc" = 1 ]
check "refused load: says what was attempted ($err)" grep -qF "attach dev tby$ID: load BPF program and maps:" <<<"$err"
check "refused load: points at -v" grep -qF -- "-v shows the kernel's log" <<<"$err"
check "refused load: its own pins removed" [ ! -e "$tby" ]
mkdir -p "$tby"
bpftool map create "$tby/buckets" type hash key 16 value 8 entries 16 name buckets
err=$(tb -v attach dev "tby$ID" 2>&1)
check "refused load with -v: shows libbpf's and the kernel's last lines" grep -q "reuse pinned map" <<<"$err"
check "refused load: nothing attached" lacks xdp ip -n "$NS_R" link show dev "tby$ID"
check "state unchanged" [ "$(state)" = "$snap" ]

# -batch checks every line before running any.
for i in $(seq 1 39); do echo "rule set dev $DEV_R 198.19.$i.0/24 rate 1mbit  # line $i"; done >"$tmp/batch"
echo "rule set dev $DEV_R default rate 5mbitz" >>"$tmp/batch"
err=$(tb -batch "$tmp/batch" 2>&1)
rc=$?
check "batch with a bad line 40: exit 2 (got $rc)" [ "$rc" = 2 ]
check "batch: says line 40 ($err)" grep -qF "line 40: rule set: invalid rate \"5mbitz\": unknown unit" <<<"$err"
check "batch: nothing changed" [ "$(state)" = "$snap" ]
# Found by the fuzz run (fuzz.sh): status's failure named no line.
err=$(printf 'rule list dev %s\nstatus dev nosuch%s\n' "$DEV_R" "$ID" | tb -batch - 2>&1)
check "batch: a failing status names its line ($err)" grep -qF "Error: line 2: status dev nosuch$ID" <<<"$err"
printf 'rule set dev %s 198.19.1.0/24 rate 1mbit\n\n# comment\nrule del dev %s 198.19.2.0/24\n' "$DEV_R" "$DEV_R" >"$tmp/batch2"
err=$(tb -batch "$tmp/batch2" 2>&1)
check "batch: deleting a rule that will not exist fails at line 4 ($err)" grep -qF "line 4: rule del dev $DEV_R: no rule for 198.19.2.0/24" <<<"$err"
check "batch: nothing changed" [ "$(state)" = "$snap" ]
rules=$(tb -j rule list dev "$DEV_R")
printf 'attach dev %s mode xdp\nrule del dev %s 198.18.4.0/24\nrule set dev %s 198.18.4.0/24 rate 1mbit\n' \
	"$DEV_R" "$DEV_R" "$DEV_R" >"$tmp/batch3"
check "batch: a re-attach keeps rules, so deleting one after it is valid" tb -batch "$tmp/batch3"
check "batch: rules as before" [ "$(tb -j rule list dev "$DEV_R")" = "$rules" ]
snap=$(state)
sed -i '$d' "$tmp/batch"
check "a valid batch of 39 lines runs" tb -batch "$tmp/batch"
check "all 39 rules are there" [ "$(tb -j rule list dev "$DEV_R" | jq length)" = 41 ]
sed 's/rule set/rule del/; s/ rate 1mbit//' "$tmp/batch" | tb -batch -
check "batch from stdin deleted them" [ "$(state)" = "$snap" ]

# A batch fails as a whole: what a line would refuse at run time is
# refused while checking, and a line that fails while running has the
# lines before it undone.
snap=$(state)
err=$(printf 'rule set dev %s 198.18.9.0/24 rate 1mbit\nattach dev nosuch%s\n' "$DEV_R" "$ID" | tb -batch - 2>&1)
check "batch attaching a device that does not exist: refused at line 2 ($err)" \
	grep -qF "line 2: attach dev nosuch$ID: no such device" <<<"$err"
check "batch: nothing changed" [ "$(state)" = "$snap" ]
expect_fail 1 "reset dev nosuch$ID: no such device" reset dev "nosuch$ID"
# show addr without a bucket says why: an allow-list entry charges none.
check "an allow-list entry" tb rule set dev "$DEV_R" 198.18.7.0/28 action pass
snap=$(state)
expect_fail 1 "show dev $DEV_R addr 198.18.7.1: no bucket: its rule, 198.18.7.0/28 action pass, charges none" \
	show dev "$DEV_R" addr 198.18.7.1
expect_fail 1 "show dev $DEV_R addr 198.18.9.9: no bucket (no traffic seen since it was last evicted or reset)" \
	show dev "$DEV_R" addr 198.18.9.9
check "the allow-list entry deleted" tb rule del dev "$DEV_R" 198.18.7.0/28
snap=$(state)
# Control bytes and bytes that are no UTF-8 come back escaped, never raw.
check "-j error about a name with control and non-UTF-8 bytes is valid JSON" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j rule set dev \$'a\x1bb\xffc' default rate 1mbit |
		jq -e '.error == \"rule set dev a\\\\x1bb\\\\xffc: no such device\"' >/dev/null"
err=$(tb rule set dev "$DEV_R" default rate $'5\x07mbit' 2>&1)
check "text error: the control byte escaped ($err)" grep -qF 'invalid rate "5\x07mbit"' <<<"$err"
check "no lock file for names that are no device" [ ! -e "$(lockfile "$NS_R" "nosuch$ID")" ]
err=$(printf 'rule set dev %s 198.18.9.0/24 rate 1mbit\nattach dev %s mode tc-ingress\n' "$DEV_R" "$DEV_R" | tb -batch - 2>&1)
check "batch re-attaching in another mode: refused at line 2 ($err)" \
	grep -qF "line 2: attach dev $DEV_R: attached as mode xdp key src, not mode tc-ingress key src; detach first to change that" <<<"$err"
check "batch: nothing changed" [ "$(state)" = "$snap" ]
printf 'rule set dev %s 198.18.9.0/24 rate 1mbit\nrule set dev %s 198.18.4.0/24 rate 7mbit\nrule del dev %s 198.18.4.0/24\nshow dev %s addr 198.18.99.99\n' \
	"$DEV_R" "$DEV_R" "$DEV_R" "$DEV_R" >"$tmp/undo"
err=$(tb -batch "$tmp/undo" 2>&1)
rc=$?
check "batch failing while running (show of an address with no bucket): exit 1 (got $rc)" [ "$rc" = 1 ]
check "batch: says which line failed and that the lines before it were undone ($err)" \
	grep -qF "line 4 failed; the 3 lines before it were undone" <<<"$err"
check "batch: rules as before, the deleted one back" [ "$(state)" = "$snap" ]
printf 'attach dev tbx%s mode tc-ingress\nrule set dev tbx%s default rate 1mbit\nshow dev tbx%s addr 198.18.99.99\n' \
	"$ID" "$ID" "$ID" >"$tmp/undo2"
tb -batch "$tmp/undo2" >/dev/null 2>&1
check "batch: a device it attached is detached again" [ ! -e "$(pins "$NS_R" "tbx$ID")" ]
check "batch: ... and its clsact qdisc removed" lacks clsact tc -n "$NS_R" qdisc show dev "tbx$ID"
# A batch opens a device's pins once; its own detach and attach make new
# ones, which the lines after them must use.
printf 'attach dev tbx%s mode tc-ingress\nrule set dev tbx%s default rate 1mbit\ndetach dev tbx%s\nattach dev tbx%s mode tc-ingress\nrule set dev tbx%s 198.18.5.0/24 rate 2mbit\n' \
	"$ID" "$ID" "$ID" "$ID" "$ID" >"$tmp/reattach"
check "batch: attach, rule, detach, attach again, rule" tb -batch "$tmp/reattach"
check "batch: the rule after the second attach is in its pins, the one before is gone" \
	[ "$(tb -j rule list dev "tbx$ID" | jq -c 'map(.prefix)')" = '["198.18.5.0/24"]' ]
check "batch: detach" tb detach dev "tbx$ID"

# Batch input that is no command is an error with its line number.
for input in 'help\n' "rule set dev $DEV_R default rate 1mbit\0 rate 9mbit\n"; do
	err=$(printf "$input" | tb -batch - 2>&1)
	rc=$?
	check "batch $(printf %q "$input"): exit 2 (got $rc: $err)" [ "$rc" = 2 ]
	check "batch $(printf %q "$input"): says line 1" grep -qE "line 1: (help is no command to run from a batch|a NUL byte in the line)" <<<"$err"
done
check "batch: nothing changed" [ "$(state)" = "$snap" ]
err=$(tb -batch /tmp 2>&1)
check "batch of a directory: exit 1, read error at line 1 ($err)" \
	bash -c "[ $? = 1 ] && grep -qF 'line 1: batch: read /tmp: Is a directory' <<<\"\$1\"" _ "$err"
err=$(nsenter --net=/var/run/netns/$NS_R $TBCTL -batch - <&- 2>&1)
check "batch from a closed stdin: a read error ($err)" grep -qF "batch: read standard input: Bad file descriptor" <<<"$err"
check "-j help is JSON" bash -c "$TBCTL -j help | jq -e '.commands | length == 22' >/dev/null"

# A batch naming 70 devices takes 70 locks (it used to hang on the 65th).
for i in $(seq 1 70); do echo "link add d${i}x$ID type veth peer name e${i}x$ID"; done | ip -n "$NS_R" -batch -
for i in $(seq 1 70); do echo "reset dev d${i}x$ID"; done >"$tmp/many"
err=$(timeout 30 nsenter --net=/var/run/netns/$NS_R $TBCTL -batch "$tmp/many" 2>&1)
rc=$?
check "batch naming 70 devices: no hang, exit 1 (got $rc)" [ "$rc" = 1 ]
check "batch naming 70 devices: checked under all 70 locks ($err)" grep -qF "line 1: reset dev d1x$ID: not attached" <<<"$err"
rm -f /run/tbctl/d*x"$ID":*.lock
# The batch holds its devices' locks from its check to its end.
printf 'rule set dev %s 198.19.77.0/24 rate 1mbit\n' "$DEV_R" >"$tmp/slow"
flock "$(lockfile "$NS_R" "$DEV_R")" sleep 2 &
holder=$!
lock_held "$(lockfile "$NS_R" "$DEV_R")"
check "a batch waits for a writer holding its device" \
	bash -c "timeout 1 nsenter --net=/var/run/netns/$NS_R $TBCTL -batch $tmp/slow; [ \$? = 124 ]"
wait "$holder"
check "and runs once the writer is done" tb -batch "$tmp/slow"
tb rule del dev "$DEV_R" 198.19.77.0/24

# Concurrent invocations serialise on the device lock.
pids=()
for i in $(seq 1 16); do tb rule set dev "$DEV_R" "198.19.$i.0/24" rate "${i}mbit" & pids+=($!); done
wait "${pids[@]}"
check "16 concurrent rule sets: all 16 stored" [ "$(tb -j rule list dev "$DEV_R" | jq length)" = 18 ]
pids=()
for i in $(seq 1 16); do tb rule del dev "$DEV_R" "198.19.$i.0/24" & pids+=($!); done
wait "${pids[@]}"
check "16 concurrent rule dels: back to the snapshot" [ "$(state)" = "$snap" ]

# A read-only bpffs (a read-only bind mount, private to a mount
# namespace): detach cannot remove the pins, so it changes nothing.
err=$(unshare -m bash -c "mount --bind /sys/fs/bpf /sys/fs/bpf && mount -o remount,bind,ro /sys/fs/bpf &&
	exec nsenter --net=/var/run/netns/$NS_R $TBCTL detach dev $DEV_R" 2>&1)
rc=$?
check "detach on a read-only bpffs: exit 1 (got $rc)" [ "$rc" = 1 ]
check "detach on a read-only bpffs: says so ($err)" \
	grep -qF "detach dev $DEV_R: cannot remove the pins in $(pins "$NS_R" "$DEV_R"): Read-only file system" <<<"$err"
check "detach on a read-only bpffs: still attached" [ "$(tb -j status dev "$DEV_R" | jq '.[0].attached')" = true ]
check "detach on a read-only bpffs: state unchanged" [ "$(state)" = "$snap" ]

# Pins of another layout (another tbctl build) are refused by every
# command before anything is read or written, and detach still works.
# The program keeps its own maps; only the pin is swapped.
pin=$(pins "$NS_R" "$DEV_R")/dropcache
rm -f "$pin"
check "pin a dropcache of another layout" bpftool map create "$pin" type percpu_array key 4 value 8 entries 1 name tbold
snap=$(state)
for cmd in "show dev $DEV_R" "stats dev $DEV_R" "rule list dev $DEV_R" "rule set dev $DEV_R default rate 2mbit" \
	"reset dev $DEV_R" "attach dev $DEV_R"; do
	expect_fail 1 "another tbctl build's (map dropcache has type 6, key 4 and value 8 bytes; this build expects 6, 4 and 48)" $cmd
done
check "detach works over another build's pins" tb detach dev "$DEV_R"
check "detach removed them" [ ! -e "$(pins "$NS_R" "$DEV_R")" ]

# Pins that a newer build attached (a later layout in the config) are
# refused the same way, attach included: nothing is downgraded. The newer
# config is larger (layouts grow values at their end), so it is read by
# the beginning every layout shares.
# This build's layout: the last definition (the first is the fixture's).
LAYOUT=$(awk '$1 == "#define" && $2 == "TB_LAYOUT" { v = $3 } END { print v }' "$ROOT/bpf/abi/tb_abi.h")
pins=$(pins "$NS_R" "$DEV_R")
check "attach again" tb attach dev "$DEV_R"
read -ra bytes <<<"$(bpftool -j map lookup pinned "$pins/config" key 0 0 0 0 | jq -r '.value | join(" ")')"
NEWER=$((LAYOUT + 1))
bytes[22]=$(printf '0x%02x' $NEWER)     # struct tb_config.layout
rm -f "$pins/config"
check "pin a newer build's config, 16 bytes larger, of layout $NEWER" \
	bpftool map create "$pins/config" type array key 4 value $((${#bytes[@]} + 16)) entries 1 name config
check "fill it" bpftool map update pinned "$pins/config" key 0 0 0 0 value "${bytes[@]}" $(printf '0 %.0s' {1..16})
snap=$(state)
for cmd in "show dev $DEV_R" "rule list dev $DEV_R" "rule set dev $DEV_R default rate 2mbit" "attach dev $DEV_R"; do
	expect_fail 1 "another tbctl build's (the pins are layout $NEWER, this build's is $LAYOUT)" $cmd
done
check "a newer build's pins: state unchanged" [ "$(state)" = "$snap" ]
check "detach works over a newer build's pins" tb detach dev "$DEV_R"
check "detach removed them" [ ! -e "$pins" ]

# An older build's pins whose upgrade would change a map the datapath
# writes (here the drop caches) cannot be copied exactly: attach refuses,
# naming the map, and leaves the pins as they were, none set aside.
check "attach again" tb attach dev "$DEV_R"
read -ra bytes <<<"$(bpftool -j map lookup pinned "$pins/config" key 0 0 0 0 | jq -r '.value | join(" ")')"
bytes[22]=$(printf '0x%02x' $((LAYOUT - 1)))
check "mark the pins as layout $((LAYOUT - 1))" bpftool map update pinned "$pins/config" key 0 0 0 0 value "${bytes[@]}"
rm -f "$pins/dropcache"
check "pin a dropcache of another value size" \
	bpftool map create "$pins/dropcache" type percpu_array key 4 value 56 entries 256 name dropcache
snap=$(state)
expect_fail 1 "map dropcache changed (type 6, key 4, value 56 bytes, 256 entries; this build's: 6, 4, 48, 256) in a way no upgrade carries; detach, then attach" \
	attach dev "$DEV_R"
check "nothing set aside" lacks pending ls "$pins"
check "detach works over them" tb detach dev "$DEV_R"
summary
