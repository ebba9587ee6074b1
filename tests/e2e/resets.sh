#!/usr/bin/env bash
# reset counters under a flood, xdp and tc-ingress, with a table of
# 1,048,576 addresses: the global counters never count less than the
# buckets they cover. A reset that zeroed the buckets before the global
# counters left what was charged in between in a bucket and took it from
# the global counters.
. "$(dirname "$0")/lib.bash"
setup

SEND_S=3
RESETS=4
SRC=${SRC4[0]}

for mode in xdp tc-ingress; do
	check "$mode: attach, max-addrs 1048576" tb attach dev "$DEV_R" mode "$mode" max-addrs 1048576
	check "$mode: a rule the flood is over" tb rule set dev "$DEV_R" default rate 10mbit burst 100k
	in_s "$TBGEN" send --src "$SRC" --dst "$DST4" --port 9000 --size 64 --seconds $SEND_S >"$tmp/sent" &
	s=$!
	done_resets=0
	for ((i = 0; i < RESETS; i++)); do
		sleep 0.5
		tb reset dev "$DEV_R" counters && done_resets=$((done_resets + 1))
	done
	wait $s
	check "$mode: $done_resets resets during the flood" [ "$done_resets" = $RESETS ]
	stats=$(tb -j stats dev "$DEV_R")
	sums=$(tb -j show dev "$DEV_R" | jq -c '{passed_packets: (map(.passed_packets) | add),
		passed_bytes: (map(.passed_bytes) | add), dropped_packets: (map(.dropped_packets) | add),
		dropped_bytes: (map(.dropped_bytes) | add)}')
	for f in passed_packets passed_bytes dropped_packets dropped_bytes; do
		global=$(jq ".$f" <<<"$stats")
		buckets=$(jq ".$f" <<<"$sums")
		check "$mode: global $f $global >= the buckets' $buckets" [ "$global" -ge "$buckets" ]
	done
	check "$mode: the flood was dropped ($(jq .dropped_packets <<<"$stats") since the last reset)" \
		[ "$(jq .dropped_packets <<<"$stats")" -gt 0 ]
	check "$mode: detach" tb detach dev "$DEV_R"
done
summary
