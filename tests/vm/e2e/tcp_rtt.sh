#!/usr/bin/env bash
# TCP with a real round trip (netem, 20 ms on the ACK path) through tbctl
# on Debian's kernel: each transfer completes within b + r*T; with ECN,
# action mark sets CE. Under TB_FULL=1 (make test-full), the TCP
# benchmark's VM path in its smoke form too (police, shape and tbctl at
# RTT 20 ms, on the ACK path and half each way), so it cannot rot; make
# bench runs it whole. Goodput is judged by make bench, not here.
. "$(dirname "$0")/../../e2e/lib.bash"
setup
SECS=3
RATE=1250000               # 10mbit
BURST=$RATE                # tbctl's default: 1 s of rate
check "netem on the ACK path" in_r tc qdisc replace dev "$DEV_R" root netem delay 20ms
in_r iperf3 -s -B "$DST4" -D -I "$tmp/iperf3.pid" >/dev/null
session_cleanup() { [[ -s $tmp/iperf3.pid ]] && kill "$(cat "$tmp/iperf3.pid")" 2>/dev/null; }
listening "$NS_R" tcp 5201

for action in drop mark; do
	ip netns exec "$NS_S" sysctl -qw net.ipv4.tcp_ecn=$([[ $action == mark ]] && echo 1 || echo 2)
	tb attach dev "$DEV_R" mode xdp >/dev/null
	tb rule set dev "$DEV_R" default rate 10mbit action $action
	t0=$(now_ms)
	iperf3_to "$DST4" $SECS "$tmp/j" -B "${SRC4[0]}"
	t1=$(now_ms)
	stats=$(tb -j stats dev "$DEV_R")
	tb detach dev "$DEV_R"
	got=$(jq '.end.sum_received.bytes // 0' "$tmp/j")
	passed=$(jq .passed_bytes <<<"$stats")
	hi=$((BURST + RATE * (t1 - t0) / 1000))
	check "$action: the transfer completed ($got bytes)" [ "$got" -gt 0 ]
	rtt=$(jq '.end.streams[0].sender.min_rtt // 0' "$tmp/j")
	check "$action: TCP's smallest round trip is netem's 20 ms ($rtt us)" between 20000 "$rtt" 60000
	check "$action: admitted $passed bytes <= b + r T = $hi" [ "$passed" -le "$hi" ]
done
check "mark: CE set ($(jq .marked_packets <<<"$stats") packets)" [ "$(jq .marked_packets <<<"$stats")" -gt 0 ]

if [[ ${TB_FULL:-0} == 1 ]]; then
	TCP_BENCH_RUNS=1 TCP_BENCH_SECONDS=2 TCP_BENCH_OMIT=1 TCP_BENCH_RTTS=20 TCP_BENCH_FLOWS=1 TCP_BENCH_BURSTS="1000 100" \
		TCP_BENCH_LIMITERS="tbctl-xdp tbctl-shape police" \
		"$ROOT/tools/tcp_bench.sh" --where vm --out "$tmp/tcp.jsonl" 2>"$tmp/bench.err"
	rc=$?
	check "tcp_bench.sh in the VM ran (exit $rc: $(tail -n 1 "$tmp/bench.err"))" [ $rc = 0 ]
	for lim in tbctl-xdp tbctl-shape police; do
		for burst in 1000 100; do
			check "tcp_bench: $lim measured at RTT 20 ms (netem) with a $burst ms burst, 1 s left out, cubic" \
				jq -e -s --arg l "$lim" --argjson b $burst 'map(select(.limiter == $l and .rtt_ms == 20 and
					.burst_ms == $b and .omit_s == 1 and .cc == "cubic" and .min_rtt_ms >= 20 and .goodput_over_cap > 0 and
					.goodput_over_ceiling >= .goodput_over_cap)) | length == 1' "$tmp/tcp.jsonl" >/dev/null
		done
	done

	# Half the round trip each way: netem on both ports of a bridge between.
	TCP_BENCH_RUNS=1 TCP_BENCH_SECONDS=2 TCP_BENCH_OMIT=1 TCP_BENCH_RTTS=20 TCP_BENCH_FLOWS=1 TCP_BENCH_BURSTS=1000 \
		TCP_BENCH_LIMITERS="tbctl-xdp tbctl-shape" TCP_BENCH_DELAY=both \
		"$ROOT/tools/tcp_bench.sh" --where vm --out "$tmp/both.jsonl" 2>"$tmp/both.err"
	rc=$?
	check "tcp_bench.sh in the VM, delay both ways, ran (exit $rc: $(tail -n 1 "$tmp/both.err"))" [ $rc = 0 ]
	for lim in tbctl-xdp tbctl-shape; do
		check "tcp_bench: $lim at RTT 20 ms, 10 ms each way (smallest RTT $(jq -r --arg l $lim 'select(.limiter == $l) | .min_rtt_ms' "$tmp/both.jsonl") ms)" \
			jq -e -s --arg l "$lim" 'map(select(.limiter == $l and .delay == "both" and .min_rtt_ms >= 20 and
				.min_rtt_ms < 60 and .goodput_over_cap > 0)) | length == 1' "$tmp/both.jsonl" >/dev/null
	done
fi
summary
