#!/usr/bin/env bash
# Least privilege: as root with exactly the capabilities a command names
# (setpriv drops the rest from the bounding set, so exec grants no more),
# every command works; without one of them it is refused before it
# touches anything, naming what it lacks. The units' hardening rates at
# most 4.0 in systemd-analyze security, and every syscall tbctl makes
# through attach, apply, status, the exporter and detach passes their
# system call filters.
. "$(dirname "$0")/lib.bash"
setup

READ=+bpf
LOAD=+bpf,+perfmon,+net_admin
UNHOOK=+bpf,+net_admin,+sys_admin
HOOK=+bpf,+perfmon,+net_admin,+sys_admin
# as CAPS COMMAND...: tbctl in NS_R with only CAPS (setpriv's list).
as() {
	local caps=$1
	shift
	nsenter --net=/var/run/netns/"$NS_R" setpriv --bounding-set=-all${caps:+,$caps} --inh-caps=-all --no-new-privs \
		"$TBCTL" "$@"
}
# without CAPS CAP COMMAND...: refused without CAP (one of CAPS), exit 1,
# naming it.
refused() {
	local caps=$1 cap=$2 out rc
	shift 2
	out=$(as "$(tr , '\n' <<<"$caps" | grep -vx "+$cap" | paste -sd ,)" "$@" 2>&1)
	rc=$?
	[[ $rc == 1 && $out == *"permission denied"*"lacks CAP_${cap^^}"* ]] || { echo "exit $rc: $out"; return 1; }
}
quiet() { "$@" >/dev/null; }
attached() { [[ $(tb -j status dev "$DEV_R" | jq -r ".[0].attached") == true ]]; }

# Where bpffs is not mounted (a mount namespace of its own, a directory
# in its place), mounting it takes CAP_SYS_ADMIN, which the error names.
err=$(unshare -m bash -c "mount -t tmpfs none /sys/fs && mkdir /sys/fs/bpf &&
	exec nsenter --net=/var/run/netns/$NS_R setpriv --bounding-set=-all,+bpf --inh-caps=-all $TBCTL stats dev $DEV_R" 2>&1)
check "bpffs not mounted, without CAP_SYS_ADMIN: says mounting it takes that ($err)" \
	grep -qF "stats dev $DEV_R: bpffs unavailable at /sys/fs/bpf: not mounted, and mounting it takes CAP_SYS_ADMIN" <<<"$err"

for cap in bpf perfmon net_admin sys_admin; do
	check "attach without CAP_${cap^^} is refused, naming it" refused $HOOK $cap attach dev "$DEV_R"
	check "  and pins nothing" bash -c "! ls $(pins $NS_R $DEV_R) >/dev/null 2>&1"
done
check "attach with CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN and CAP_SYS_ADMIN" as $HOOK attach dev "$DEV_R"
check "  the program is on the device" attached

check "rule set with CAP_BPF alone" as $READ rule set dev "$DEV_R" default rate 10mbit
check "rule set 198.18.0.10/32 with CAP_BPF alone" as $READ rule set dev "$DEV_R" 198.18.0.10/32 rate 1mbit
list=$(as $READ rule list dev "$DEV_R")
check "  shows both rules" bash -c "grep -q '^default rate 10Mbit' <<<'$list' && grep -q '^198.18.0.10/32 rate 1Mbit' <<<'$list'"
check "rule del with CAP_BPF alone" as $READ rule del dev "$DEV_R" 198.18.0.10/32
state=$(as $READ -j status dev "$DEV_R" | jq -r '.[0].attached')
check "status with CAP_BPF alone: attached $state (the program recorded at attach)" [ "$state" = true ]
check "metrics with CAP_BPF alone: the device is attached" \
	bash -c "nsenter --net=/var/run/netns/$NS_R setpriv --bounding-set=-all,$READ --inh-caps=-all $TBCTL metrics dev $DEV_R |
		grep -qx 'tbctl_device_attached{dev=\"$DEV_R\"} 1'"
for c in "show dev $DEV_R" "stats dev $DEV_R" "save dev $DEV_R" "top dev $DEV_R -n 1"; do
	# shellcheck disable=SC2086 # a command and its words
	check "$c with CAP_BPF alone" quiet as $READ $c
done
as $READ save dev "$DEV_R" >"$tmp/saved"
check "apply with CAP_BPF alone" as $READ apply dev "$DEV_R" "$tmp/saved"
check "reset without CAP_PERFMON is refused, naming it" refused $LOAD perfmon reset dev "$DEV_R"
check "reset without CAP_NET_ADMIN is refused, naming it" refused $LOAD net_admin reset dev "$DEV_R"
check "reset with CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN" as $LOAD reset dev "$DEV_R"
check "rule set without CAP_BPF is refused, naming it" refused $READ bpf rule set dev "$DEV_R" default rate 1mbit
check "  and the rule is unchanged" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -q '^default rate 10Mbit'"

echo "attach dev $DEV_R" >"$tmp/batch"
echo "rule set dev $DEV_R default rate 2mbit" >>"$tmp/batch"
out=$(as $READ -batch "$tmp/batch" 2>&1)
check "a batch that attaches, with CAP_BPF alone, is refused before it runs ($out)" \
	bash -c "[[ '$out' == *'line 1'*'lacks CAP_PERFMON, CAP_NET_ADMIN, CAP_SYS_ADMIN'* ]]"
check "  and its rule is not set" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -q '^default rate 10Mbit'"

for cap in net_admin sys_admin; do
	check "detach without CAP_${cap^^} is refused, naming it" refused $UNHOOK $cap detach dev "$DEV_R"
	check "  and the program stays on the device, pinned" attached
done
check "detach with CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN" as $UNHOOK detach dev "$DEV_R"
check "  nothing is left on the device" bash -c "! ip -n $NS_R link show $DEV_R | grep -q xdp"

# The units, as make install writes them.
root=$tmp/root
check "make install" make -s -C "$ROOT" install PREFIX=/usr DESTDIR="$root"
units=$root/lib/systemd/system
for u in tbctl@.service tbctl-exporter.service tbctl-fleet@.service; do
	level=$(systemd-analyze security --offline=yes "$units/$u" 2>&1 | sed -nE 's/.*Overall exposure level for .*: ([0-9.]+) .*/\1/p')
	check "systemd-analyze security rates $u ${level:-(no rating)}: at most 4.0" \
		awk -v l="${level:-99}" 'BEGIN { exit !(l <= 4.0) }'
done

# expand GROUP...: the system calls of filter groups and names, nested.
expand() {
	local w
	for w in "$@"; do
		if [[ $w == @* ]]; then
			# shellcheck disable=SC2046 # one name a line
			expand $(systemd-analyze syscall-filter "$w" | sed -n '2,$p' | grep -v '^ *#' | tr -d ' ')
		else
			echo "$w"
		fi
	done
}
# allowed UNIT: the system calls its SystemCallFilter= lines let through.
allowed() {
	local allow=() deny=() l
	while IFS= read -r l; do
		# shellcheck disable=SC2206 # a filter line lists names
		if [[ $l == '~'* ]]; then deny+=(${l#\~}); else allow+=($l); fi
	done < <(sed -n 's/^SystemCallFilter=//p' "$1")
	sort -u <(expand "${allow[@]}") >"$tmp/allow"
	sort -u <(expand "${deny[@]}") >"$tmp/deny"
	comm -23 "$tmp/allow" "$tmp/deny"
}
# made TRACE: the system calls strace recorded.
made() { sed -nE 's/^[0-9]+ +([a-z0-9_]+)\(.*/\1/p' "$1" | sort -u; }
strace_r() { nsenter --net=/var/run/netns/"$NS_R" strace -f -qq -o "$1" "${@:2}"; }
strace_r "$tmp/attach.trace" "$TBCTL" -batch "$tmp/batch" >/dev/null
strace_r "$tmp/apply.trace" "$TBCTL" apply dev "$DEV_R" "$tmp/saved" >/dev/null
strace_r "$tmp/detach.trace" "$TBCTL" detach dev "$DEV_R" >/dev/null
cat "$tmp/attach.trace" "$tmp/apply.trace" "$tmp/detach.trace" >"$tmp/unit.trace"
missing=$(comm -23 <(made "$tmp/unit.trace") <(allowed "$units/tbctl@.service") | tr '\n' ' ')
check "tbctl@.service's filter allows every call of attach, apply, detach${missing:+ (not: $missing)}" [ -z "$missing" ]
check "attach again, for the exporter" tb attach dev "$DEV_R"
nsenter --net=/var/run/netns/"$NS_R" strace -f -qq -o "$tmp/exporter.trace" \
	setpriv --bounding-set=-all,$READ --inh-caps=-all "$TBCTL" exporter listen 127.0.0.1:10089 2>/dev/null &
tracer=$!
listening "$NS_R" tcp 10089
check "the exporter with CAP_BPF alone serves the device as attached" \
	bash -c "nsenter --net=/var/run/netns/$NS_R curl -sf --max-time 5 http://127.0.0.1:10089/metrics |
		grep -qx 'tbctl_device_attached{dev=\"$DEV_R\"} 1'"
# strace's child is the exporter (setpriv execs it): stopped, it exits,
# and so does strace.
kill "$(pgrep -P "$tracer")"
wait "$tracer"
# What setpriv made before it executed tbctl is not the exporter's.
sed -i '0,/execve(".*tbctl"/d' "$tmp/exporter.trace"
missing=$(comm -23 <(made "$tmp/exporter.trace") <(allowed "$units/tbctl-exporter.service") | tr '\n' ' ')
check "tbctl-exporter.service's filter allows every call of a scrape${missing:+ (not: $missing)}" [ -z "$missing" ]
# The fleet agent with its unit's capabilities, against a redis-server on
# the root namespace's loopback (with -n, the agent takes NS_R's pins and
# keeps its own namespace's network), until SIGTERM: what it made, and
# that it gave its credit back.
port=$((20000 + RANDOM % 20000))
redis-server --port $port --bind 127.0.0.1 --save '' --daemonize yes --pidfile "$tmp/redis.pid" \
	--logfile "$tmp/redis.log"
session_cleanup() { [[ -s $tmp/redis.pid ]] && kill "$(cat "$tmp/redis.pid")"; }
within 5 "redis-server answered" bash -c "redis-cli -p $port ping 2>/dev/null | grep -q PONG"
strace -f -qq -o "$tmp/agent.trace" setpriv --bounding-set=-all,$LOAD --inh-caps=-all "$TBCTL" -n "$NS_R" fleet run dev "$DEV_R" \
	store redis://127.0.0.1:$port host h1 2>"$tmp/agent.err" &
tracer=$!
check "the agent with CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN runs" within 5 "the agent said it runs" \
	bash -c "'$TBCTL' -n $NS_R status dev $DEV_R | grep -q 'agent running'"
kill "$(pgrep -P "$tracer")"
wait "$tracer"
check "and stops on SIGTERM, saying nothing ($(head -c 200 "$tmp/agent.err"))" [ ! -s "$tmp/agent.err" ]
sed -i '0,/execve(".*tbctl"/d' "$tmp/agent.trace"
missing=$(comm -23 <(made "$tmp/agent.trace") <(allowed "$units/tbctl-fleet@.service") | tr '\n' ' ')
check "tbctl-fleet@.service's filter allows every call of the agent${missing:+ (not: $missing)}" [ -z "$missing" ]
check "detach" tb detach dev "$DEV_R"
summary
