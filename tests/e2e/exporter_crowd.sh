#!/usr/bin/env bash
# The exporter under hostile clients from 40 addresses, more than its
# connection limit can hold at the per-address limit: clients that send a
# request line and never the end of their headers, opening again as soon
# as they are closed, and then clients that send one byte a second. While
# they run, a scrape every 0.5 s from another address is answered within
# 2 s, every one; each trickling client is closed at the 3 s deadline for
# a request's headers (user/exporter/server.c, EXPORTER_DEADLINE_MS), however
# it trickles; the exporter still answers afterwards. make test runs it
# scaled (50 connections an address, 8 s each); make test-full at the
# issue's size (250 an address: 10,000 held, and 8 trickling clients an
# address: 320, for 20 s each).
. "$(dirname "$0")/lib.bash"
setup

PORT=10088
EXP=198.18.0.2:$PORT
DEADLINE_S=3
if [[ ${TB_FULL:-0} == 1 ]]; then HOLD=250 TRICKLE=8 SECS=20; else HOLD=50 TRICKLE=8 SECS=8; fi
METRIC="tbctl_rule_rate_bytes_per_second{dev=\"$DEV_R\",rule=\"default\",action=\"drop\"} 125000000"
CROWD=()
for i in $(seq 1 40); do CROWD+=("198.18.1.$i"); done
for a in "${CROWD[@]}"; do ip -n "$NS_S" addr add "$a/16" dev "$DEV_S"; done
netns_neigh "$NS_R" "$DEV_R" "$NS_S" "$DEV_S" "${CROWD[@]}"
crowd=$(IFS=,; echo "${CROWD[*]}")
SCRAPER=${SRC4[1]}
exporter=
session_cleanup() {
	[[ -n $exporter ]] && kill "$exporter" 2>/dev/null
	wait 2>/dev/null
}

# scrapes SECONDS FILE: a scrape every 0.5 s for SECONDS from SCRAPER,
# each line of FILE "CODE SECONDS" (curl's exit code, time taken).
scrapes() {
	local n=$(($1 * 2)) i t0
	for ((i = 0; i < n; i++)); do
		t0=$(now_ms)
		run_s curl -s -o "$tmp/body" --max-time 2 --interface "$SCRAPER" "http://$EXP/metrics"
		echo "$? $(($(now_ms) - t0)) $(grep -c "$METRIC" "$tmp/body" 2>/dev/null)"
		sleep 0.5
	done >"$2"
}
# answered FILE: the scrapes answered in time with this device's metric.
answered() { awk '$1 == 0 && $2 <= 2000 && $3 == 1' "$1" | wc -l; }
slowest() { sort -n -k2 "$1" | tail -n 1 | awk '{ print $2 }'; }

check "attach" run_r "$TBCTL" attach dev "$DEV_R"
check "a default rule" run_r "$TBCTL" rule set dev "$DEV_R" default rate 1gbit
exporter_start "$EXP"

run_s "$TBGEN" hold --src "$crowd" --dst "${EXP%:*}" --port $PORT --count $HOLD --seconds $((SECS + 1)) \
	>"$tmp/held" &
held=$!
sleep 1
scrapes "$SECS" "$tmp/scrapes1"
wait $held
n=$(wc -l <"$tmp/scrapes1")
check "$((40 * HOLD)) connections held from 40 addresses ($(xargs <"$tmp/held")): $(answered "$tmp/scrapes1") of $n scrapes answered within 2 s (slowest $(slowest "$tmp/scrapes1") ms)" \
	[ "$(answered "$tmp/scrapes1")" = "$n" ]

run_s "$TBGEN" hold --src "$crowd" --dst "${EXP%:*}" --port $PORT --count $TRICKLE --trickle 1 \
	--seconds $((SECS + 1)) >"$tmp/trickled" &
held=$!
sleep 1
scrapes "$SECS" "$tmp/scrapes2"
wait $held
n=$(wc -l <"$tmp/scrapes2")
check "$((40 * TRICKLE)) clients sending a byte a second from 40 addresses: $(answered "$tmp/scrapes2") of $n scrapes answered within 2 s (slowest $(slowest "$tmp/scrapes2") ms)" \
	[ "$(answered "$tmp/scrapes2")" = "$n" ]
longest=$(awk '$1 == "longest" { print $2 }' "$tmp/trickled")
closed=$(awk '$1 == "closed" { print $2 }' "$tmp/trickled")
check "the trickling clients were closed ($closed times), none later than the ${DEADLINE_S} s deadline and a tick: $longest s" \
	awk -v l="$longest" -v c="$closed" -v d=$DEADLINE_S 'BEGIN { exit !(c > 0 && l <= d + 1) }'
# One trickling client alone, whom no crowd makes room for: the deadline.
run_s "$TBGEN" hold --src "${SRC4[2]}" --dst "${EXP%:*}" --port $PORT --count 1 --trickle 1 \
	--seconds $((DEADLINE_S + 3)) >"$tmp/alone"
longest=$(awk '$1 == "longest" { print $2 }' "$tmp/alone")
check "one client sending a byte a second is closed at the ${DEADLINE_S} s deadline: after $longest s" \
	awk -v l="$longest" -v d=$DEADLINE_S 'BEGIN { exit !(l >= d && l <= d + 1) }'
check "the exporter answers afterwards" bash -c "run_s() { nsenter --net=/var/run/netns/$NS_S \"\$@\"; }; run_s curl -sf --max-time 2 --interface $SCRAPER http://$EXP/metrics | grep -qF '$METRIC'"
exporter_stop
check "detach" run_r "$TBCTL" detach dev "$DEV_R"
summary
