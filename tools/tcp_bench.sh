#!/usr/bin/env bash
# TCP through every limiter: iperf3 between two namespaces, one source
# address, 1 and 4 parallel flows, against tbctl in each mode (rate and
# burst given, everything else its default) and against an nft meter,
# tc's police action and a tbf shaper at the same rate and burst (an nft
# byte meter holds a second of rate more).
#
#   tools/tcp_bench.sh [--where host|vm] [--out FILE.jsonl]
#
# host: RTT ~ 0 (veth) unless TCP_BENCH_RTTS says otherwise, the limiters
# this kernel has. vm: inside Debian's stock kernel (tests/vm/run), which
# has act_police and fq (tbctl's action shape), at RTT 0, 20 and 80 ms. A
# round trip is a delay on the receiver's egress, so on the ACK path, or
# with TCP_BENCH_DELAY=both half of it each way, in a bridge between
# sender and receiver: netem where the kernel has it, else
# build/delayline. One JSON object per run is appended to the output:
# goodput over the cap and over the limiter's ceiling, retransmitted
# segments, the smallest round trip the sender saw, and for tbctl the
# bytes it admitted against b + r*T and its signals (early drops, marks)
# and tail drops over the run. tbctl-mark is action mark with ECN on in
# the sender. TCP_BENCH_RUNS, TCP_BENCH_SECONDS, TCP_BENCH_CAPS,
# TCP_BENCH_RTTS, TCP_BENCH_FLOWS and TCP_BENCH_LIMITERS narrow a run;
# TCP_BENCH_CC is the sender's congestion control (default cubic,
# Debian's). TCP_BENCH_BURSTS lists the bursts, in ms of rate, that every
# limiter is given in turn (default 1000, tbctl's own). Each run leaves
# its first TCP_BENCH_OMIT seconds out of goodput and retransmits (iperf3
# -O); by default the burst's time plus 2 s of slow start, so that what is
# measured is the steady state.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${BUILD:-$ROOT/build}
TBCTL=$B/tbctl
WHERE=host
OUT=/dev/stdout
while (($#)); do
	case $1 in
	--where) WHERE=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	*) echo "tcp_bench: unknown option $1" >&2; exit 2 ;;
	esac
done
RUNS=${TCP_BENCH_RUNS:-3}
SECS=${TCP_BENCH_SECONDS:-10}
if [[ $WHERE == host ]]; then
	CAPS=(${TCP_BENCH_CAPS:-10 100})
	RTTS=(${TCP_BENCH_RTTS:-0})
	LIMITERS=(${TCP_BENCH_LIMITERS:-tbctl-xdp tbctl-xdpgeneric tbctl-tc-ingress tbctl-tc-egress tbctl-mark nft tbf})
else
	CAPS=(${TCP_BENCH_CAPS:-10})
	RTTS=(${TCP_BENCH_RTTS:-0 20 80})
	LIMITERS=(${TCP_BENCH_LIMITERS:-tbctl-xdp tbctl-xdpgeneric tbctl-tc-ingress tbctl-tc-egress tbctl-mark tbctl-shape nft police tbf})
fi
FLOWS=(${TCP_BENCH_FLOWS:-1 4})
# The sender's congestion control, per socket (iperf3 -C): the machine's
# default need not be Debian's (cubic), and a netns may not change it.
CC=${TCP_BENCH_CC:-cubic}
grep -qw "$CC" /proc/sys/net/ipv4/tcp_available_congestion_control || modprobe -q "tcp_$CC" || {
	echo "tcp_bench: congestion control $CC is not in this kernel" >&2
	exit 1
}

# Where a round trip is added. ack: on the receiver's egress, so all of it
# on the ACK path. both: half each way, in a bridge between the two.
DELAY=${TCP_BENCH_DELAY:-ack}
case $DELAY in
ack) ;;
both)
	for rtt in "${RTTS[@]}"; do
		((rtt % 2 == 0)) || { echo "tcp_bench: RTT $rtt ms does not halve into whole ms" >&2; exit 2; }
	done ;;
*) echo "tcp_bench: TCP_BENCH_DELAY is ack or both, not $DELAY" >&2; exit 2 ;;
esac

NS_S=tcpb-s$$; NS_R=tcpb-r$$; NS_M=tcpb-m$$
DEV_S=tcpbs$$; DEV_R=tcpbr$$
# The bridge's ports, towards the sender and towards the receiver.
DEV_MS=tcpbms$$; DEV_MR=tcpbmr$$
SRC=198.18.0.10; DST=198.18.0.2
. "$ROOT/tools/netns.bash"
log() { echo "tcp_bench: $*" >&2; }
netns_session
if [[ $DELAY == both ]]; then
	ip -n $NS_S link del $DEV_S
	ip netns add $NS_M
	ip link add $DEV_S netns $NS_S type veth peer name $DEV_MS netns $NS_M
	ip link add $DEV_R netns $NS_R type veth peer name $DEV_MR netns $NS_M
	ip -n $NS_M link add br0 type bridge
	ip -n $NS_M link set br0 addrgenmode none up
	for dev in $DEV_MS $DEV_MR; do ip -n $NS_M link set $dev master br0 addrgenmode none up; done
	ip -n $NS_S link set $DEV_S addrgenmode none up
	ip -n $NS_R link set $DEV_R addrgenmode none up
fi
ip -n $NS_S addr add $SRC/24 dev $DEV_S
ip -n $NS_R addr add $DST/24 dev $DEV_R
netns_neigh $NS_S $DEV_S $NS_R $DEV_R $DST
netns_neigh $NS_R $DEV_R $NS_S $DEV_S $SRC

# The burst every limiter gets, in ms of rate, for the run in progress.
BURSTS=(${TCP_BENCH_BURSTS:-1000})
BURST_MS=
burst_of() { echo $(($1 * 1000000 / 8 * BURST_MS / 1000)); }
tb_burst() { echo burst "$(burst_of "$1")"; }
omit_of() { echo "${TCP_BENCH_OMIT:-$(((BURST_MS + 999) / 1000 + 2))}"; }
# Goodput per charged byte for full-size segments, the most a limiter can
# give: tbctl and tbf charge every segment's Ethernet frame (1,448 bytes
# of payload in 1,514); police and nft charge a GRO aggregate's length
# once, so theirs is taken as 1.
ceiling_of() { case $1 in tbctl-* | tbf) echo 0.9564 ;; *) echo 1 ;; esac; }

# limiter_on NAME CAP_MBIT: the limiter, with the burst above.
limiter_on() {
	local rate=$(($2 * 1000000 / 8)) burst
	burst=$(burst_of "$2")
	case $1 in
	tbctl-xdp | tbctl-xdpgeneric | tbctl-tc-ingress)
		tb attach dev $DEV_R mode "${1#tbctl-}" >/dev/null
		tb rule set dev $DEV_R default rate "$2mbit" $(tb_burst "$2") ;;
	tbctl-mark)
		in_s sysctl -qw net.ipv4.tcp_ecn=1
		tb attach dev $DEV_R mode xdp >/dev/null
		tb rule set dev $DEV_R default rate "$2mbit" action mark $(tb_burst "$2") ;;
	tbctl-tc-egress)
		tbs attach dev $DEV_S mode tc-egress key dst >/dev/null
		tbs rule set dev $DEV_S default rate "$2mbit" $(tb_burst "$2") ;;
	tbctl-shape)
		tbs attach dev $DEV_S mode tc-egress key dst qdisc fq >/dev/null
		tbs rule set dev $DEV_S default rate "$2mbit" action shape $(tb_burst "$2") ;;
	nft)
		# A byte meter's bucket holds a second of rate beyond its burst
		# (nft_limit.c): no smaller burst can be asked of it.
		in_r nft -f - <<-EOT
		table inet tcpb {
			chain input {
				type filter hook input priority 0; policy accept;
				ip saddr $SRC meter m { ip saddr limit rate over $rate bytes/second burst $burst bytes } drop
			}
		}
		EOT
		;;
	police)
		in_r tc qdisc add dev $DEV_R clsact
		in_r tc filter add dev $DEV_R ingress protocol ip prio 1 matchall \
			action police rate "$2mbit" burst "$burst" conform-exceed drop ;;
	tbf)
		in_s tc qdisc replace dev $DEV_S root tbf rate "$2mbit" burst "$burst" latency 100ms ;;
	esac
}

limiter_off() {
	case $1 in
	tbctl-xdp | tbctl-xdpgeneric | tbctl-tc-ingress) tb detach dev $DEV_R ;;
	tbctl-mark) tb detach dev $DEV_R; in_s sysctl -qw net.ipv4.tcp_ecn=2 ;;
	tbctl-tc-egress | tbctl-shape) tbs detach dev $DEV_S ;;
	nft) in_r nft delete table inet tcpb ;;
	police) in_r tc qdisc del dev $DEV_R clsact ;;
	tbf) in_s tc qdisc del dev $DEV_S root ;;
	esac
}

tbctl_of() { case $1 in tbctl-tc-egress | tbctl-shape) echo tbs $DEV_S ;; tbctl-*) echo tb $DEV_R ;; esac; }

# delay_on NS DEV MS: every frame DEV sends leaves MS ms later. netem
# where the kernel has it; else build/delayline (tools/delayline.c), a tap
# the egress is redirected to, which sends each frame on later with mark
# 1. The classifier is classic BPF: "ld mark; jeq 0; ret -1 (match); ret
# 0", so the frames delayline sends pass the second time.
UNMARKED="4,32 0 0 4294963220,21 0 1 0,6 0 0 4294967295,6 0 0 0"
delay_on() {
	local ns=$1 dev=$2 ms=$3 tap=dl$2
	if modprobe -q sch_netem 2>/dev/null; then
		ip netns exec "$ns" tc qdisc replace dev "$dev" root netem delay "${ms}ms" limit 100000
		return
	fi
	# nsenter runs delayline in its own process, so $! is delayline's.
	nsenter --net=/var/run/netns/"$ns" "$B/delayline" --dev "$dev" --tap "$tap" --delay "$ms" \
		--seconds $((${#BURSTS[@]} * ${#CAPS[@]} * ${#FLOWS[@]} * ${#LIMITERS[@]} * RUNS * (SECS + 90))) \
		>"$tmp/dl-$dev" 2>&1 &
	echo $! >"$tmp/dl-$dev.pid"
	for _ in $(seq 50); do ip -n "$ns" link show "$tap" >/dev/null 2>&1 && break; sleep 0.1; done
	ip -n "$ns" link set "$tap" addrgenmode none up
	ip netns exec "$ns" tc qdisc replace dev "$dev" root handle 1: htb
	ip netns exec "$ns" tc filter add dev "$dev" parent 1: protocol all prio 1 bpf bytecode "$UNMARKED" \
		action mirred egress redirect dev "$tap"
}
delay_off() {
	ip netns exec "$1" tc qdisc del dev "$2" root || true
	delayline_stop "$2"
}
delayline_stop() {
	local pid=$tmp/dl-$1.pid
	[[ -s $pid ]] || return 0
	kill "$(cat "$pid")" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$(cat "$pid")" 2>/dev/null || break; sleep 0.1; done
	log "delayline on $1: $(cat "$tmp/dl-$1")"
	rm -f "$pid"
}
# The egresses a round trip is shared out over, equally: "NS DEV" each.
if [[ $DELAY == ack ]]; then DELAYED=("$NS_R $DEV_R"); else DELAYED=("$NS_M $DEV_MS" "$NS_M $DEV_MR"); fi
rtt_on() { (($1)) || return 0; for d in "${DELAYED[@]}"; do delay_on $d $(($1 / ${#DELAYED[@]})); done; }
rtt_off() { (($1)) || return 0; for d in "${DELAYED[@]}"; do delay_off $d; done; }

in_r iperf3 -s -B $DST -D -I "$tmp/iperf3.pid" >/dev/null
sleep 0.5
session_cleanup() {
	[[ -s $tmp/iperf3.pid ]] && kill "$(cat "$tmp/iperf3.pid")" 2>/dev/null
	for d in "${DELAYED[@]}"; do delayline_stop ${d#* }; done
	ip netns del $NS_M 2>/dev/null || true
}

for rtt in "${RTTS[@]}"; do
	rtt_on "$rtt"
	for BURST_MS in "${BURSTS[@]}"; do
		OMIT=$(omit_of)
		for cap in "${CAPS[@]}"; do
			for flows in "${FLOWS[@]}"; do
				for lim in "${LIMITERS[@]}"; do
					for run in $(seq "$RUNS"); do
						limiter_on "$lim" "$cap"
						t0=$(date +%s%N)
						# The server may still be closing the previous test: try again.
						for _ in 1 2 3; do
							in_s timeout $((SECS + OMIT + 30)) iperf3 -C "$CC" -c $DST -t "$SECS" -O "$OMIT" -P "$flows" -J >"$tmp/j" 2>/dev/null
							jq -e .end.sum_received.bits_per_second "$tmp/j" >/dev/null 2>&1 && break
							sleep 1
						done
						t1=$(date +%s%N)
						admitted=null signals=null tail=null
						if [[ $lim == tbctl-* ]]; then
							read -r fn dev < <(tbctl_of "$lim")
							read -r admitted signals tail < <($fn -j stats dev "$dev" |
								jq -r '"\(.passed_bytes) \(.early_dropped_packets + .marked_packets) \(.dropped_packets - .early_dropped_packets)"')
						fi
						limiter_off "$lim"
						line=$(jq -M -c --arg lim "$lim" --arg where "$WHERE" --argjson cap "$cap" --argjson rtt "$rtt" --arg delay "$DELAY" \
							--argjson burst_ms "$BURST_MS" --argjson omit "$OMIT" --argjson ceiling "$(ceiling_of "$lim")" \
							--argjson flows "$flows" --argjson run "$run" --argjson admitted "$admitted" \
							--argjson signals "$signals" --argjson tail "$tail" \
							--argjson ns $((t1 - t0)) --argjson burst "$(burst_of "$cap")" '
							{ where: $where, limiter: $lim, cc: .end.sender_tcp_congestion,
							  cap_mbit: $cap, rtt_ms: $rtt, delay: $delay, flows: $flows, run: $run,
							  burst_ms: $burst_ms, omit_s: $omit, ceiling: $ceiling,
							  seconds: .end.sum_received.seconds,
							  goodput_mbit: (.end.sum_received.bits_per_second / 1e6),
							  goodput_over_cap: (.end.sum_received.bits_per_second / ($cap * 1e6)),
							  goodput_over_ceiling: (.end.sum_received.bits_per_second / ($cap * 1e6) / $ceiling),
							  retransmits: .end.sum_sent.retransmits, signals: $signals, tail_drops: $tail,
							  min_rtt_ms: ([.end.streams[].sender.min_rtt // empty] | if length > 0 then min / 1000 else null end),
							  segments: ((.end.sum_sent.bytes // 0) / 1448 | floor),
							  admitted_over_bound: (if $admitted == null then null else
								$admitted / ($burst + $cap * 1e6 / 8 * $ns / 1e9) end) }' \
							"$tmp/j") || line=
						if [[ -n $line ]]; then
							echo "$line" >>"$OUT"
							log "$line"
						else
							log "$lim cap $cap rtt $rtt burst $BURST_MS ms flows $flows: iperf3 gave no result"
						fi
					done
				done
			done
		done
	done
	rtt_off "$rtt"
done
