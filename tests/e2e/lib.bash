# Shared by the end-to-end tests: two network namespaces joined by a veth
# pair, addresses only from 198.18.0.0/15 and 2001:db8::/32, torn down by a
# trap; assertions that count into one "N passed, N failed" line.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${BUILD:-$ROOT/build}
TBCTL=$B/tbctl
TBGEN=$B/tbgen
. "$ROOT/tools/netns.bash"

# The seed of the run's samples (kill points, fuzz cases): tests/run.sh
# draws it and says it; a suite run alone draws its own.
if [[ -z ${TB_SEED:-} ]]; then
	TB_SEED=$((RANDOM << 15 | RANDOM))
	echo "seed $TB_SEED (TB_SEED=$TB_SEED repeats this run)"
fi
export TB_SEED

PASS=0
FAIL=0
# Results go to the test's own stdout (fd 3) even from a check whose
# command output is sent to /dev/null.
exec 3>&1
ok() { PASS=$((PASS + 1)); echo "ok   $*" >&3; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL $*" >&3; }
# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d"; fi; }
summary() { echo "$PASS passed, $FAIL failed"; [[ $FAIL -eq 0 ]]; }
# lacks PATTERN COMMAND...: the command succeeds, and no line of its output
# matches PATTERN (grep's). A negated grep over a command that failed
# would pass on its empty output.
lacks() { local p=$1 out; shift; out=$("$@") || return 1; ! grep -q -- "$p" <<<"$out"; }

# check_documented EXPOSITION: every family of a scrape is named in
# docs/operations.md's table of series, so the table cannot fall behind.
check_documented() {
	local fam missing=
	for fam in $(awk '$1 == "#" && $2 == "TYPE" { print $3 }' "$1"); do
		grep -qF "\`$fam\`" "$ROOT/docs/operations.md" || missing+=" $fam"
	done
	check "every family of the scrape is in docs/operations.md${missing:+ (missing:$missing)}" [ -z "$missing" ]
}

# Unique per run: the namespaces' names, and so that a run's devices
# never share a name with another's in the root namespace.
ID=$$
NS_S=tbs$ID
NS_R=tbr$ID
DEV_S=tbs$ID
DEV_R=tbr$ID
SRC4=(198.18.0.10 198.18.0.11 198.18.0.12 198.18.0.13 198.18.0.14 198.18.0.15 198.18.0.16 198.18.0.17)
SRC6=(2001:db8::10 2001:db8::11 2001:db8::12 2001:db8::13)
DST4=198.18.0.2
DST6=2001:db8::2
PAYLOAD=1000
FRAME4=$((PAYLOAD + 42))   # Ethernet 14 + IPv4 20 + UDP 8
FRAME6=$((PAYLOAD + 62))   # Ethernet 14 + IPv6 40 + UDP 8
# A receiver stops when its senders go idle; this only bounds it. Its
# clock starts before the sender's, and on a loaded machine the sender can
# start seconds later, so the bound is far beyond any send.
RECV_LIMIT=60

# The test's hosts: sources in NS_S, receiver addresses in NS_R, static
# neighbours both ways; $tmp is a scratch directory. All gone at exit.
setup() {
	netns_session || { echo "cannot create namespaces"; exit 1; }
	for a in "${SRC4[@]}"; do ip -n "$NS_S" addr add "$a/16" dev "$DEV_S"; done
	for a in "${SRC6[@]}"; do ip -n "$NS_S" addr add "$a/64" dev "$DEV_S" nodad; done
	for a in 2 3 4; do ip -n "$NS_R" addr add "198.18.0.$a/16" dev "$DEV_R"; done
	for a in 2 3; do ip -n "$NS_R" addr add "2001:db8::$a/64" dev "$DEV_R" nodad; done
	netns_neigh "$NS_S" "$DEV_S" "$NS_R" "$DEV_R" 198.18.0.2 198.18.0.3 198.18.0.4 2001:db8::2 2001:db8::3
	netns_neigh "$NS_R" "$DEV_R" "$NS_S" "$DEV_S" "${SRC4[@]}" "${SRC6[@]}"
}

# Where tbctl keeps device DEV of namespace NS (an ip netns name): its
# pins and its lock, keyed by the name and the namespace's inode
# (user/lib/devkey.h).
netns_ino() { stat -L -c %i "/var/run/netns/$1"; }
pins() { echo "/sys/fs/bpf/tbctl/$2:$(netns_ino "$1")"; }
lockfile() { echo "/run/tbctl/$2:$(netns_ino "$1").lock"; }

# prog_id TBCTL...: the id of the program on DEV_R, as the tbctl command
# TBCTL... reports it. Without jq: these checks run hundreds of times.
prog_id() {
	local s
	s=$("$@" -j status dev "$DEV_R") || return 1
	[[ $s =~ \"prog_id\":([0-9]+) ]] && echo "${BASH_REMATCH[1]}"
}

# kill_points [--every] TRACE: where to kill a tbctl command that made the
# calls in strace's TRACE (-e trace=bpf,rename,membarrier,sendto), one a
# line as "PHASE POINT". A POINT is a bpf() call, numbered from 1, at
# which to kill it: the first, each one after a call that may change what
# outlives tbctl (a pin, a map write, a program run; the last such gives
# one past the end), and every 8th in the runs of calls that only read or
# make process-local objects, for what other syscalls change meanwhile
# (killed at any other call, it leaves the state of one of these); with
# --every, every call and one past the end. Or it is rN, the Nth rename,
# where the rename moved a map, or mN, the Nth membarrier. PHASE is where
# the command was: the last landmark it had passed (before-hook;
# taken-over, once pins an earlier release keyed by the name alone were
# renamed into the namespace, itself the point "takeover rN"; hooked,
# once netlink or a tcx link put its program on the device; grace, from the membarrier
# an upgrade waits in before its merge; ran, once a program run returned;
# renamed, once a rename moved a map) and, after a slash, how many calls
# that change state it had made; the renames share the phase "rename".
kill_points() {
	local every=0
	[[ $1 == --every ]] && { every=1; shift; }
	awk -v every=$every '
		BEGIN {
			n = split("OBJ_GET OBJ_GET_INFO_BY_FD MAP_LOOKUP_ELEM MAP_LOOKUP_BATCH MAP_GET_NEXT_KEY " \
				"PROG_GET_FD_BY_ID MAP_GET_FD_BY_ID BTF_GET_FD_BY_ID BTF_LOAD MAP_CREATE " \
				"PROG_LOAD PROG_BIND_MAP MAP_FREEZE PROG_QUERY LINK_GET_FD_BY_ID", r)
			for (i = 1; i <= n; i++)
				local_only["BPF_" r[i]] = 1
			phase = "before-hook"
			calls = renames = barriers = writes = last = 0
			wrote = 1
		}
		function point(k) { print phase "/" writes, k; last = k }
		/^[0-9]* *bpf\(BPF_/ {
			cmd = $0
			sub(/^[0-9]* *bpf\(/, "", cmd)
			sub(/[^A-Z_].*/, "", cmd)
			calls++
			if (every || wrote || calls - last >= 8)
				point(calls)
			wrote = !(cmd in local_only)
			writes += wrote
			if (cmd == "BPF_PROG_TEST_RUN")
				phase = "ran"
			# A tcx link made, or its program swapped: hooked.
			if (cmd == "BPF_LINK_CREATE" || cmd == "BPF_LINK_UPDATE")
				phase = "hooked"
			next
		}
		# The landmarks change what outlives tbctl too: the call
		# after each is a point.
		/^[0-9]* *sendto\(.*(RTM_SETLINK|RTM_NEWTFILTER)/ { phase = "hooked"; wrote = 1; next }
		/^[0-9]* *membarrier\(/ {
			print phase "/" writes, "m" ++barriers
			phase = "grace"
			wrote = 1
			next
		}
		# Pins an earlier release keyed by the name alone, taken over
		# into the namespace (a directory renamed to NAME:INODE).
		/^[0-9]* *rename\(.*:[0-9]+"\) = 0$/ {
			renames++
			print "takeover", "r" renames
			phase = "taken-over"
			wrote = 1
			next
		}
		/^[0-9]* *rename\(/ {
			renames++
			if ($0 ~ / = 0$/) {
				print "rename", "r" renames
				phase = "renamed"
				wrote = 1
			}
		}
		END {
			if (every || wrote || calls + 1 - last >= 8)
				point(calls + 1)
		}' "$1"
}

# sample LABEL N [coarse]: of the kill points on stdin (kill_points), N
# at random from each phase (coarse: each landmark's, whatever the calls
# made since), or all of them under TB_FULL=1; the points alone, in their
# order. Drawn from TB_SEED and LABEL: a seed repeats a run exactly, each
# loop draws its own, and another seed draws other points, so every point
# is tried over runs.
sample() {
	local salt
	salt=$(cksum <<<"$1" | cut -d' ' -f1)
	awk -v seed="${TB_SEED:-1}" -v salt="$salt" -v n="$2" -v coarse="${3:-}" -v full="${TB_FULL:-0}" '
		coarse { sub(/\/.*/, "", $1) }
		{ phase[NR] = $1; pt[NR] = $2; size[$1]++ }
		END {
			srand((seed * 7919 + salt) % 2147483647)
			for (i = 1; i <= NR; i++) {
				# Selection sampling: each phase keeps exactly
				# min(N, its size) of its points, in order.
				p = phase[i]
				if (full || rand() * (size[p] - seen[p]) < n - kept[p]) {
					kept[p]++
					print pt[i]
				}
				seen[p]++
			}
		}'
}

# rule_refused WANT ARG...: "rule set dev DEV_R ARG..." fails with an
# error that says WANT, and the rules are as they were.
rule_refused() {
	local want=$1 err
	shift
	tb rule list dev "$DEV_R" >"$tmp/before"
	if err=$(tb rule set dev "$DEV_R" "$@" 2>&1); then
		fail "rule set $* was accepted"
		return
	fi
	check "rule set $*: \"$err\"" grep -q -- "$want" <<<"$err"
	check "rule set $*: the rules are unchanged" diff "$tmp/before" <(tb rule list dev "$DEV_R")
}

# Sum of a per-address counter from "tbctl -j show".
show_field() { # ADDR FIELD [tb|tbs] [DEV]
	"${3:-tb}" -j show dev "${4:-$DEV_R}" addr "$1" 2>/dev/null | jq -r ".[0].$2 // 0"
}

# window_bound SENT RATE BURST FRAME: b + r*T plus one frame, in bytes,
# T from the first datagram tbgen sent to the last (the elapsed line of
# its output, SENT) and 5 ms for the last to reach the receiver's hook.
window_bound() {
	awk -v r="$2" -v b="$3" -v f="$4" '$1 == "elapsed" { printf "%d", b + r * ($2 + 0.005) + f }' "$1"
}

# capped SRC RECV SENT RATE BURST FRAME MIN [tb|...]: a source's datagrams
# (RECV from tbgen recv, SENT from its send) got through, more than MIN,
# within b + r*T, and its bucket counted every one received.
capped() {
	local src=$1 recv=$2 sent=$3 rate=$4 burst=$5 frame=$6 min=$7 got bound passed
	got=$(awk -v s="$src" '$1 == s { print $2 }' "$recv")
	bound=$(window_bound "$sent" "$rate" "$burst" "$frame")
	check "$src got ${got:-0} datagrams through" [ "${got:-0}" -gt "$min" ]
	check "$src admitted $((${got:-0} * frame)) bytes <= b + r*T = $bound" \
		[ "$((${got:-0} * frame))" -le "$bound" ]
	passed=$(show_field "$src" passed_packets "${8:-tb}")
	check "its bucket counted every datagram received: ${passed:-0} of ${got:-0}" [ "${passed:-0}" -ge "${got:-0}" ]
	CAPPED_GOT=${got:-0}
}

# exporter_start ADDR:PORT: tbctl exporter in NS_R, its PID in $exporter
# (nsenter execs its command), once it listens.
exporter_start() {
	nsenter --net=/var/run/netns/"$NS_R" "$TBCTL" exporter listen "$1" 2>"$tmp/exporter.log" &
	exporter=$!
	listening "$NS_R" tcp "${1##*:}"
}

# exporter_stop: the exporter still runs, and exits 0 on SIGTERM.
exporter_stop() {
	check "the exporter is still running" kill -0 "$exporter"
	kill "$exporter"
	wait "$exporter"
	check "the exporter exits 0 on SIGTERM" [ $? = 0 ]
	exporter=
}

# Integer arithmetic helpers for bounds.
between() { # LOW VALUE HIGH
	[[ $1 -le $2 && $2 -le $3 ]]
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# iperf3_to DST SECONDS OUT [ARG...]: one TCP transfer from NS_S to an
# iperf3 server the test started, its JSON result in OUT; tried again while
# the server is still closing the previous test. The sender runs cubic,
# Debian's default, whatever this machine's default is.
iperf3_to() {
	local dst=$1 secs=$2 out=$3
	shift 3
	for _ in 1 2 3; do
		in_s timeout $((secs + 30)) iperf3 -C cubic -c "$dst" -t "$secs" -J "$@" >"$out" 2>/dev/null
		jq -e .end.sum_received.bytes "$out" >/dev/null 2>&1 && return 0
		sleep 1
	done
	return 1
}

# within SECONDS WHAT COMMAND...: true once COMMAND succeeds, polled every
# 20 ms for at most SECONDS; else says WHAT did not happen in that time.
within() {
	local end=$(($(now_ms) + $1 * 1000)) secs=$1 what=$2
	shift 2
	until "$@"; do
		(($(now_ms) < end)) || { echo "$what within $secs s" >&2; return 1; }
		sleep 0.02
	done
}

# listening NS udp|tcp PORT: true once a socket in NS is bound to PORT,
# within 2 s: a receiver or server started in the background is ready.
listening() {
	local flag=-Hlun
	[[ $2 == tcp ]] && flag=-Hltn
	within 2 "nothing listens on $2 port $3 in $1" bound "$1" "$flag" "$3"
}
bound() { [[ -n $(ip netns exec "$1" ss "$2" "sport = :$3") ]]; }

# policing ADDR [tb|tbs]: true once ADDR's bucket has dropped a packet,
# within 3 s: its burst is spent and the flow is held to its rate.
policing() { within 3 "$1 has dropped nothing" dropped_some "$1" "${2:-tb}"; }
dropped_some() { (($(show_field "$1" dropped_packets "$2") > 0)); }

# lock_held FILE: true once another process holds the flock on FILE,
# within 2 s.
lock_held() { within 2 "nothing took the lock on $1" bash -c "! flock -n '$1' true"; }

# held_at SYSCALL PID: true once a process that PID started (strace's
# tracee, under nsenter and a subshell) is stopped in SYSCALL (its x86-64
# number) for two polls 50 ms apart, within 3 s: strace's injected delay
# holds it there, not a passing stop.
held_at() {
	local i p held seen=0 kids
	for ((i = 0; i < 60; i++)); do
		kids=$(pgrep -P "$2")
		for p in $kids; do kids+=" $(pgrep -P "$p" | xargs)"; done
		for p in $kids; do kids+=" $(pgrep -P "$p" | xargs)"; done
		held=0
		for p in $kids; do
			[[ $(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null) == t &&
				$(cut -d' ' -f1 "/proc/$p/syscall" 2>/dev/null) == "$1" ]] && held=1
		done
		if ((held)); then
			((++seen == 2)) && return 0
		else
			seen=0
		fi
		sleep 0.05
	done
	echo "no process that $2 started was held in syscall $1 within 3 s" >&2
	return 1
}

# eventually COMMAND...: true once the command succeeds, within 2 s (for
# state the kernel releases asynchronously, such as a freed program).
eventually() {
	for _ in $(seq 20); do "$@" && return 0; sleep 0.1; done
	return 1
}
