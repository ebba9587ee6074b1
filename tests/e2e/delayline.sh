#!/usr/bin/env bash
# build/delayline, the benchmark's round trip on a kernel without netem:
# bad arguments are refused by name; tcp_bench.sh at RTT 20 ms through it,
# on the ACK path or half each way, gives the sender a round trip of 20 ms
# and no less, loses nothing in the line, and leaves nothing behind.
. "$(dirname "$0")/lib.bash"
DL=$B/delayline
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# refused EXIT MESSAGE ARGS...: delayline ARGS exits EXIT, saying MESSAGE.
refused() {
	local code=$1 msg=$2 rc
	shift 2
	"$DL" "$@" >/dev/null 2>"$out/err"
	rc=$?
	check "delayline $*: exit $code, \"$msg\" (got $rc: $(head -c 200 "$out/err"))" \
		[ "$rc" = "$code" -a "$(grep -cF -- "$msg" "$out/err")" != 0 ]
}
refused 2 "usage: delayline"
refused 2 "usage: delayline" --dev lo --tap dlx
refused 2 "delay 20ms is not a whole number" --dev lo --tap dlx --delay 20ms
refused 2 "delay 60001 is not a whole number up to 60000" --dev lo --tap dlx --delay 60001
refused 2 "limit must hold two frames" --dev lo --tap dlx --delay 20 --limit 1000
refused 2 "mark 0 is what the redirect matches" --dev lo --tap dlx --delay 20 --mark 0
refused 1 "no device nosuch0 in this namespace" --dev nosuch0 --tap dlx --delay 20

TCP_BENCH_RUNS=1 TCP_BENCH_SECONDS=3 TCP_BENCH_OMIT=1 TCP_BENCH_RTTS=20 TCP_BENCH_CAPS=10 \
	TCP_BENCH_FLOWS=1 TCP_BENCH_LIMITERS=tbctl-xdp \
	"$ROOT/tools/tcp_bench.sh" --out "$out/tcp.jsonl" 2>"$out/bench.err" &
pid=$!
wait $pid
rc=$?
check "tcp_bench.sh at RTT 20 ms on this kernel ran (exit $rc: $(tail -n 1 "$out/bench.err"))" [ $rc = 0 ]
modprobe -q sch_netem 2>/dev/null &&
	fail "this kernel has netem, so tcp_bench.sh did not use delayline: the test belongs in the VM's kernel"
check "one result at RTT 20 ms, the sender on cubic" \
	jq -se 'length == 1 and .[0].rtt_ms == 20 and .[0].cc == "cubic" and .[0].goodput_mbit > 1' "$out/tcp.jsonl" >/dev/null
check "the sender's smallest round trip is 20 ms, within 2 ms (got $(jq -r .min_rtt_ms "$out/tcp.jsonl"))" \
	jq -e '.min_rtt_ms >= 20 and .min_rtt_ms < 22' "$out/tcp.jsonl" >/dev/null
check "delayline sent frames on and dropped none ($(grep -o 'delayline on .*' "$out/bench.err"))" \
	grep -qE "delayline on tcpbr$pid: delayed [1-9][0-9]* [0-9]+ dropped 0 busy [0-9]+$" "$out/bench.err"
check "no delayline of the run is left" bash -c "! pgrep -f -- '--tap dltcpbr$pid( |$)' >/dev/null"

# Half the round trip each way, in a bridge between the two namespaces.
TCP_BENCH_RUNS=1 TCP_BENCH_SECONDS=3 TCP_BENCH_OMIT=1 TCP_BENCH_RTTS=20 TCP_BENCH_CAPS=10 \
	TCP_BENCH_FLOWS=1 TCP_BENCH_LIMITERS=tbctl-xdp TCP_BENCH_DELAY=both \
	"$ROOT/tools/tcp_bench.sh" --out "$out/both.jsonl" 2>"$out/both.err" &
pid=$!
wait $pid
rc=$?
check "tcp_bench.sh with the delay both ways ran (exit $rc: $(tail -n 1 "$out/both.err"))" [ $rc = 0 ]
check "both ways: the sender's smallest round trip is 20 ms, within 2 ms (got $(jq -r .min_rtt_ms "$out/both.jsonl"))" \
	jq -e '.delay == "both" and .min_rtt_ms >= 20 and .min_rtt_ms < 22 and .goodput_mbit > 1' "$out/both.jsonl" >/dev/null
for dev in tcpbms$pid tcpbmr$pid; do
	check "both ways: the delayline on $dev sent frames on and dropped none" \
		grep -qE "delayline on $dev: delayed [1-9][0-9]* [0-9]+ dropped 0 busy [0-9]+$" "$out/both.err"
done
check "both ways: no namespace of the run is left" bash -c "! ip netns list | grep -q -- '-$pid\\b'"

TCP_BENCH_DELAY=sideways "$ROOT/tools/tcp_bench.sh" >/dev/null 2>"$out/err"
rc=$?
check "TCP_BENCH_DELAY=sideways refused, exit 2 (got $rc: $(cat "$out/err"))" \
	[ $rc = 2 -a "$(grep -c "TCP_BENCH_DELAY is ack or both, not sideways" "$out/err")" = 1 ]
TCP_BENCH_DELAY=both TCP_BENCH_RTTS=25 "$ROOT/tools/tcp_bench.sh" >/dev/null 2>"$out/err"
rc=$?
check "an odd RTT both ways refused, exit 2 (got $rc: $(cat "$out/err"))" \
	[ $rc = 2 -a "$(grep -c "RTT 25 ms does not halve into whole ms" "$out/err")" = 1 ]
summary
