#!/usr/bin/env bash
# Prometheus metrics: tbctl metrics passes promtool and agrees with tbctl's
# own counters; the exporter serves them over HTTP to a real Prometheus
# server (started here, on the receiving namespace's loopback, scraping
# every second) while a capped source floods, and the rate Prometheus
# computes agrees with tbctl's; scrapes during detach and attach never
# fail or come back half-read; bad input is refused.
. "$(dirname "$0")/lib.bash"
setup

EXP=127.0.0.1:10088
PROM=127.0.0.1:9090
exporter=
prometheus=
session_cleanup() {
	[[ -n $exporter ]] && kill "$exporter" 2>/dev/null
	[[ -n $prometheus ]] && kill "$prometheus" 2>/dev/null
	wait 2>/dev/null
}
scrape() { run_r curl -sf --max-time 5 "http://$EXP/metrics"; }
# value FILE METRIC LABELS: one sample's value.
value() { awk -v m="$2{$3}" '$1 == m { print $2 }' "$1"; }
promql() { # QUERY [TIME]: the first result's value
	run_r curl -sf --max-time 5 "http://$PROM/api/v1/query" --data-urlencode "query=$1" \
		${2:+--data-urlencode "time=$2"} | jq -r '.data.result[0].value[1] // empty'
}
# scraped_since T: true once Prometheus holds a sample of the dropped
# bytes taken after time T (it scrapes every second), within 5 s.
scraped_since() {
	for ((i = 0; i < 50; i++)); do
		awk -v s="$(promql "timestamp(tbctl_dropped_bytes_total{dev=\"$DEV_R\"})")" -v t="$1" \
			'BEGIN { exit !(s > t) }' && return 0
		sleep 0.1
	done
	return 1
}

ip -n "$NS_R" link set lo up
check "attach" tb attach dev "$DEV_R" mode xdp
check "rules" tb -batch - <<EOF
rule set dev $DEV_R default rate 8mbit burst 16k early off
rule set dev $DEV_R 198.18.0.16/28 rate 1mbit action monitor
rule set dev $DEV_R 2001:db8::/64 rate 100pps cost packets scope shared
EOF

# Bad input.
for bad in "metrics top 1001" "metrics dev" "metrics colour red" "exporter listen 1.2.3.4" \
	"exporter listen 1.2.3.4:0" "exporter listen [::1]:99999" "exporter listen host:10"; do
	# shellcheck disable=SC2086
	tb $bad >/dev/null 2>"$tmp/err"
	rc=$?
	check "tbctl $bad: exit 2 with an error ($(head -1 "$tmp/err"))" bash -c "[ $rc = 2 ] && grep -q '^Error: ' $tmp/err"
done
err=$(printf 'metrics dev %s\n' "$DEV_R" | tb -batch - 2>&1)
check "metrics is refused in a batch ($err)" grep -q "line 1: metrics is no command to run from a batch" <<<"$err"

# nsenter execs its command, so $! is the exporter's own PID.
nsenter --net=/var/run/netns/"$NS_R" "$TBCTL" exporter listen "$EXP" top 5 2>"$tmp/exporter.log" &
exporter=$!
cat >"$tmp/prom.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: tbctl
    static_configs:
      - targets: ['$EXP']
EOF
nsenter --net=/var/run/netns/"$NS_R" prometheus --config.file="$tmp/prom.yml" --storage.tsdb.path="$tmp/prom" \
	--web.listen-address="$PROM" --log.level=error >"$tmp/prom.log" 2>&1 &
prometheus=$!
for ((i = 0; i < 100; i++)); do
	run_r curl -sf --max-time 1 "http://$PROM/-/ready" >/dev/null 2>&1 && scrape >/dev/null && break
	sleep 0.2
done
# Scraping, with a few samples taken before the flood starts.
for ((i = 0; i < 100; i++)); do
	[[ $(promql "count_over_time(up{job=\"tbctl\"}[1m])") -ge 3 ]] 2>/dev/null && break
	sleep 0.2
done
check "the exporter and a Prometheus server scraping it are up" \
	bash -c "kill -0 $exporter && kill -0 $prometheus && [ \"\$(nsenter --net=/var/run/netns/$NS_R curl -sf http://$PROM/api/v1/query --data-urlencode 'query=up{job=\"tbctl\"}' | jq -r '.data.result[0].value[1]')\" = 1 ]"

# A flood from one source at twice its cap for 8 s; tbctl's own counter
# is sampled at 3 s and 7 s, and Prometheus asked for the rate over the
# same stretch.
in_r "$TBGEN" recv --port 9001 --seconds 10 --idle 0.5 >/dev/null &
recv=$!
listening "$NS_R" udp 9001
in_s "$TBGEN" send --src 198.18.0.10 --dst 198.18.0.2 --port 9001 --size 1000 --pps 2000 --seconds 8 >/dev/null &
send=$!
sleep 3
d1=$(tb -j stats dev "$DEV_R" | jq .dropped_bytes) t1=$(date +%s.%N)
sleep 4
d2=$(tb -j stats dev "$DEV_R" | jq .dropped_bytes) t2=$(date +%s.%N)
scraped_since "$t2"
window=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%d", b - a + 0.5 }')
ours=$(awk -v a="$d1" -v b="$d2" -v s="$t1" -v e="$t2" 'BEGIN { printf "%d", (b - a) / (e - s) }')
theirs=$(promql "rate(tbctl_dropped_bytes_total{dev=\"$DEV_R\"}[${window}s])" "$t2")
check "the flood dropped bytes at ${ours} B/s by tbctl's counters" [ "${ours:-0}" -gt 500000 ]
check "Prometheus' rate(tbctl_dropped_bytes_total[${window}s]) is ${theirs:-none} B/s: within 10% of tbctl's" \
	awk -v a="${theirs:-0}" -v b="$ours" 'BEGIN { exit !(a > 0.9 * b && a < 1.1 * b) }'
wait "$send"
wait "$recv"
# A scrape after the flood's last drop.
scraped_since "$(date +%s.%N)"

scrape >"$tmp/m1"
tb -j stats dev "$DEV_R" >"$tmp/stats"
check "a scrape passes promtool check metrics" bash -c "promtool check metrics <$tmp/m1"
for c in passed_packets passed_bytes dropped_packets dropped_bytes buckets_created; do
	check "tbctl_${c}_total is tbctl's $c ($(jq .$c "$tmp/stats"))" \
		[ "$(value "$tmp/m1" "tbctl_${c}_total" "dev=\"$DEV_R\"")" = "$(jq .$c "$tmp/stats")" ]
done
last=$(promql "tbctl_dropped_bytes_total{dev=\"$DEV_R\"}")
check "Prometheus' last sample of dropped bytes is tbctl's ($last)" [ "$last" = "$(jq .dropped_bytes "$tmp/stats")" ]
src=$(tb -j show dev "$DEV_R" addr 198.18.0.10)
check "the flooding source is a top address, its dropped bytes as show has them" \
	[ "$(value "$tmp/m1" tbctl_address_dropped_bytes_total "dev=\"$DEV_R\",address=\"198.18.0.10\",rule=\"default\"")" = \
	  "$(jq '.[0].dropped_bytes' <<<"$src")" ]
check "per-rule sums: the default rule's dropped bytes are its addresses'" \
	[ "$(value "$tmp/m1" tbctl_rule_dropped_bytes_total "dev=\"$DEV_R\",rule=\"default\",action=\"drop\"")" = \
	  "$(tb -j show dev "$DEV_R" | jq '[.[] | select(.rule == "default") | .dropped_bytes] | add')" ]
check "rule parameters: 8mbit is 1000000 bytes/s, 100pps is 100 packets/s" bash -c "
	grep -qx 'tbctl_rule_rate_bytes_per_second{dev=\"$DEV_R\",rule=\"default\",action=\"drop\"} 1000000' $tmp/m1 &&
	grep -qx 'tbctl_rule_rate_packets_per_second{dev=\"$DEV_R\",rule=\"2001:db8::/64\",action=\"drop\"} 100' $tmp/m1"
check "tracked addresses against max-addrs" bash -c "
	grep -qx 'tbctl_addresses_max{dev=\"$DEV_R\"} 65536' $tmp/m1 &&
	grep -qx 'tbctl_addresses_tracked{dev=\"$DEV_R\"} $(tb -j stats dev "$DEV_R" | jq .addresses_tracked)' $tmp/m1"
check "tbctl metrics prints the same exposition (textfile collector)" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL metrics top 5 >$tmp/m2 && promtool check metrics <$tmp/m2 &&
		 diff <(grep -v '^tbctl_' $tmp/m1) <(grep -v '^tbctl_' $tmp/m2) >/dev/null"
check_documented "$tmp/m2"

# The program taken off the device behind tbctl's back: the pins remain,
# but nothing polices the device, and the metrics and status say so.
check "the program is taken off by ip link" ip -n "$NS_R" link set dev "$DEV_R" xdpdrv off
tb metrics dev "$DEV_R" >"$tmp/m4"
check "with the program gone, tbctl_device_attached reads 0" \
	grep -qx "tbctl_device_attached{dev=\"$DEV_R\"} 0" "$tmp/m4"
check "and the counters are still exported" grep -q "^tbctl_dropped_bytes_total{dev=\"$DEV_R\"} [1-9]" "$tmp/m4"
check "status says NOT ATTACHED" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL status dev $DEV_R | grep -q 'NOT ATTACHED'"
check "attach puts the program back" tb attach dev "$DEV_R" mode xdp
check "and tbctl_device_attached reads 1 again" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL metrics dev $DEV_R | grep -qx 'tbctl_device_attached{dev=\"$DEV_R\"} 1'"
check "no shape rule: no tbctl_device_shape_paced sample" bash -c "! grep -q '^tbctl_device_shape_paced{' $tmp/m4"

# Scrapes while the device is detached and attached again: each is whole
# (promtool passes) and the device is there or gone, never half-read.
(
	for ((i = 0; i < 6; i++)); do
		tb detach dev "$DEV_R" >/dev/null 2>&1
		sleep 0.1
		tb attach dev "$DEV_R" mode xdp >/dev/null 2>&1
		tb rule set dev "$DEV_R" default rate 8mbit >/dev/null 2>&1
		sleep 0.1
	done
) &
churn=$!
bad=0 seen=""
for ((i = 0; i < 40; i++)); do
	if scrape >"$tmp/m3" && promtool check metrics <"$tmp/m3" >/dev/null 2>&1; then
		grep -q "^tbctl_device_attached{dev=\"$DEV_R\"} 1" "$tmp/m3" && seen+="+" || seen+="-"
	else
		bad=$((bad + 1))
	fi
done
wait "$churn"
check "40 scrapes during 6 detach/attach cycles: every one whole and valid ($bad failed; attached/absent: $seen)" [ "$bad" = 0 ]
check "a scrape lists only attached devices: after a detach the device is gone" bash -c "
	nsenter --net=/var/run/netns/$NS_R $TBCTL detach dev $DEV_R && ! nsenter --net=/var/run/netns/$NS_R curl -sf http://$EXP/metrics | grep -q 'dev=\"$DEV_R\"'"
check "a named device that is not attached reads tbctl_device_attached 0" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL metrics dev $DEV_R | grep -qx 'tbctl_device_attached{dev=\"$DEV_R\"} 0'"
kill "$exporter"
wait "$exporter"
check "the exporter exits 0 on SIGTERM" [ $? = 0 ]
exporter=
summary
