#!/usr/bin/env bash
# The exporter under clients that hold connections: one address that
# opens 2,000 connections and sends a request line but never the end of
# its headers keeps no more than the per-client limit open, scrapes from
# another address all succeed meanwhile, and the server closes the
# half-open ones at its deadline for a request's headers.
. "$(dirname "$0")/lib.bash"
setup

PORT=10088
EXP=198.18.0.2:$PORT
HOLD=2000
PER_CLIENT=8       # user/exporter/server.c, EXPORTER_PER_CLIENT
DEADLINE_S=3       # EXPORTER_DEADLINE_MS
METRIC="tbctl_rule_rate_bytes_per_second{dev=\"$DEV_R\",rule=\"default\",action=\"drop\"} 125000000"
exporter=
holder=
session_cleanup() {
	[[ -n $holder ]] && kill "$holder" 2>/dev/null
	[[ -n $exporter ]] && kill "$exporter" 2>/dev/null
	wait 2>/dev/null
}
# held: connections from the holding address that the server keeps open.
held() { run_r ss -Htn state established "( sport = :$PORT and dst 198.18.0.10 )" | wc -l; }
scrape_from_other() { run_s curl -sf --max-time 5 --interface 198.18.0.11 "http://$EXP/metrics"; }

check "attach" run_r "$TBCTL" attach dev "$DEV_R"
check "a default rule" run_r "$TBCTL" rule set dev "$DEV_R" default rate 1gbit
exporter_start "$EXP"
body=$(scrape_from_other)
check "a scrape before any client holds connections serves this device" grep -q "$METRIC" <<<"$body"

# The holder opens its connections from 198.18.0.10, the source address
# the kernel picks, and then sleeps with them open (exec keeps the
# descriptors, and its PID, which it writes, so that the kill below ends
# it and the output it holds open). Writes to one the server closed at
# once fail quietly.
run_s bash -c "ulimit -n $((HOLD + 64)); trap '' PIPE
	for ((i = 0; i < $HOLD; i++)); do
		exec {fd}<>/dev/tcp/${EXP%:*}/$PORT 2>/dev/null || continue
		printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n' >&\$fd 2>/dev/null
	done
	echo \$\$ >$tmp/opened.tmp && mv $tmp/opened.tmp $tmp/opened
	exec sleep 60" &
holder=$!
check "the holder opened its connections" within 30 "the holder did not finish" test -e "$tmp/opened"
holder=$(cat "$tmp/opened" 2>/dev/null || echo "$holder")
n=$(held)
check "the server keeps $n of its $HOLD connections open: at most $PER_CLIENT" [ "$n" -le $PER_CLIENT ]
check "and at least one: the requests did reach it" [ "$n" -ge 1 ]
ok=0
for _ in 1 2 3 4 5; do
	scrape_from_other | grep -q "$METRIC" && ok=$((ok + 1))
done
check "5 of 5 scrapes from another address succeed meanwhile ($ok)" [ $ok = 5 ]
check "the half-open connections are closed after the ${DEADLINE_S} s deadline" \
	within $((DEADLINE_S + 2)) "connections still held" bash -c "[ \$(nsenter --net=/var/run/netns/$NS_R ss -Htn state established '( sport = :$PORT and dst 198.18.0.10 )' | wc -l) = 0 ]"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
holder=
exporter_stop
check "detach" run_r "$TBCTL" detach dev "$DEV_R"
summary
