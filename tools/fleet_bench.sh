#!/usr/bin/env bash
# The fleet benchmark (make bench, section 9):
#   A  four hosts in namespaces with the real datapath and agents, one
#      redis-server: a client at twice its cap split evenly, 90/10 and all
#      on one host: the use of the rate over 1 s windows; and the time
#      until a client whose traffic moves wholly to another host is back
#      at 0.95 of the cap (with FLEET_BENCH_DELAYS, that alone, at each
#      added delay to the store: netem, in the VM).
#   B  one host, its agent keeping 10,000 and 100,000 busy keys: the
#      agent's CPU and the store's commands per second.
#   C  fleetsim: 64 simulated hosts against one redis-server and against a
#      3-master cluster, also with the hosts' clocks seconds apart and
#      drifting; the anchors (per-host caps alone, count after admit with
#      a 100 ms sync) in the same harness.
# One JSON object a line to --out FILE. FLEET_BENCH_SMOKE=1 runs each
# for a moment (make test).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${BUILD:-$ROOT/build}
TBCTL=$B/tbctl
TBGEN=$B/tbgen
OUTF=/dev/stdout
while (($#)); do
	case $1 in
	--out) OUTF=$2; shift 2 ;;
	*) echo "usage: fleet_bench.sh [--out FILE]" >&2; exit 2 ;;
	esac
done
SMOKE=${FLEET_BENCH_SMOKE:-0}
. "$ROOT/tools/netns.bash"
. "$ROOT/tools/fleet.bash"
log() { echo "fleet bench: $*" >&2; }
tmp=$(mktemp -d)
trap 'fleet_down && { [[ -n ${FLEET_BENCH_KEEP:-} ]] || rm -rf "$tmp"; }' EXIT

R=500000; BURST=50000; SHARE=5000      # 4 Mbit/s, 100 ms of it, 40 kbit/s a host
if [[ $SMOKE == 1 ]]; then
	SEND_S=3; KEYS=(1024); SIM_S=2; SIM_HOSTS=8; SIM_SPLITS=(even)
else
	SEND_S=6; KEYS=(10000 100000); SIM_S=8; SIM_HOSTS=64; SIM_SPLITS=(even 90-10 one)
fi
CLIENT=198.18.0.10
fleet_hosts "b$$" 4 $CLIENT
PORT=$(fleet_free_port)
fleet_redis "$PORT"
for h in "${FLEET_H[@]}"; do
	fleet_tb "$h" attach dev "$h" mode xdp
	fleet_tb "$h" rule set dev "$h" 198.18.0.0/16 rate ${R}bps burst $BURST fleet on share ${SHARE}bps
done
[[ -n ${FLEET_BENCH_DELAYS:-} ]] || fleet_agents "redis://127.0.0.1:$PORT" interval 10

# A. recv_all NAME: receivers on every host, 10 ms intervals, for SECONDS.
recv_all() {
	local i
	RPIDS=()
	for i in 1 2 3 4; do
		ip netns exec "${FLEET_H[i - 1]}" "$TBGEN" recv --seconds "$2" --every 0.01 >"$tmp/$1.recv$i" &
		RPIDS+=($!)
	done
	sleep 0.3
}
# The fleet's admitted bytes per 10 ms slot on the common clock, from
# every host's intervals: "slot bytes" a line.
slots() {
	awk -v f=1042 '$1 == "start" { s = $2 } $1 == "@" { n[int((s + $2) * 100 + 0.5)] += $4 * f }
		END { for (k in n) print k, n[k] }' "$@" | sort -n
}
DST=(198.18.1.2 198.18.2.2 198.18.3.2 198.18.4.2)
for split in even 90-10 one; do
	[[ -n ${FLEET_BENCH_DELAYS:-} ]] && break
	case $split in
	even) d=$(IFS=,; echo "${DST[*]}") ;;
	90-10) d=$(printf '198.18.1.2,%.0s' 1 2 3 4 5 6 7 8 9)198.18.2.2 ;;
	one) d=198.18.3.2 ;;
	esac
	log "A: $split"
	recv_all "$split" $((SEND_S + 2))
	ip netns exec "$FLEET_S" "$TBGEN" send --src $CLIENT --dst "$d" --seconds "$SEND_S" --size 1000 --pps 960 \
		>"$tmp/$split.sent"
	wait "${RPIDS[@]}"
	slots "$tmp/$split".recv* | awk -v r=$R -v b=$BURST -v sh=$SHARE -v sb=1514 -v name="$split" '
		$2 > 0 { s[$1] = $2; if (!m0 || $1 < m0) m0 = $1; if ($1 > m1) m1 = $1 }
		END {
			# 1 s windows from the second second of traffic on.
			for (i = m0 + 100; i + 99 <= m1 - 20; i += 100) {
				w = 0; for (j = i; j < i + 100; j++) w += s[j]
				u = w / r; n++; sum += u; if (!n0++ || u < min) min = u
			}
			# Every window of 1 to 300 slots against b + r*T, the
			# shares and a frame a host (a slot is 10 ms; one more
			# for the receivers'"'"' interval edges).
			for (i = m0; i <= m1; i++) c[i] = c[i - 1] + s[i]
			for (w = 1; w <= 300; w++)
				for (i = m0; i + w - 1 <= m1; i++) {
					a = c[i + w - 1] - c[i - 1]
					T = (w + 1) / 100
					x = a / (b + r * T + 4 * (sb + sh * T) + 4 * 1042)
					if (x > worst) worst = x
				}
			printf "{\"section\": \"fleet-use\", \"split\": \"%s\", \"hosts\": 4, \"use_min\": %.4f, \"use_mean\": %.4f, \"share_of_rate\": %.4f, \"windows\": %d, \"worst_bound_ratio\": %.4f}\n",
			       name, min, n ? sum / n : 0, 4 * sh / r, n, worst
		}' >>"$OUTF"
done

# move DELAY_MS: the client moves wholly from host 1 to host 2; the time
# until host 2 admits 0.95 of the cap over 100 ms.
move() {
	local rtt
	log "A: a move from host 1 to host 2 (store round trip + $1 ms)"
	recv_all move $((2 * SEND_S + 2))
	ip netns exec "$FLEET_S" "$TBGEN" send --src $CLIENT --dst 198.18.1.2 --seconds "$SEND_S" --size 1000 --pps 960 >/dev/null
	ip netns exec "$FLEET_S" "$TBGEN" send --src $CLIENT --dst 198.18.2.2 --seconds "$SEND_S" --size 1000 --pps 960 >/dev/null
	wait "${RPIDS[@]}"
	rtt=$("$TBCTL" -n "${FLEET_H[1]}" -j status dev "${FLEET_H[1]}" | jq '.[0].fleet.rtt_us')
	slots "$tmp/move.recv2" | awk -v r=$R -v rtt="$rtt" -v d="$1" '
		$2 > 0 { s[$1] = $2; if (!m0 || $1 < m0) m0 = $1; if ($1 > m1) m1 = $1 }
		END {
			# Back: the first 100 ms from which host 2 admits 0.95
			# of the cap; and its use after the first second.
			for (i = m0; i + 9 <= m1; i++) {
				w = 0; for (j = i; j < i + 10; j++) w += s[j]
				if (w >= 0.95 * r * 0.1) break
			}
			for (j = m0 + 100; j <= m1; j++) after += s[j]
			printf "{\"section\": \"fleet-move\", \"added_delay_ms\": %d, \"store_rtt_us\": %d, \"back_ms\": %d, \"use_after_1s\": %.4f}\n",
			       d, rtt, (i - m0) * 10, (m1 > m0 + 100 ? after / (r * (m1 - m0 - 99) / 100) : 0)
		}' >>"$OUTF"
}

# FLEET_BENCH_DELAYS="5 20" (the VM, which has netem): the move alone, the
# store in a namespace of its own behind that much delay, the agents in
# the sender's namespace.
if [[ -n ${FLEET_BENCH_DELAYS:-} ]]; then
	fleet_agents_stop
	ST=tbfst$$
	ip netns add "$ST"
	ip link add "sv$$" netns "$FLEET_S" type veth peer name "st$$" netns "$ST"
	ip -n "$ST" link set lo up
	ip -n "$ST" link set "st$$" up
	ip -n "$FLEET_S" link set "sv$$" up
	ip -n "$ST" addr add 198.19.255.2/30 dev "st$$"
	ip -n "$FLEET_S" addr add 198.19.255.1/30 dev "sv$$"
	SP=$(fleet_free_port)
	nsenter --net=/var/run/netns/"$ST" redis-server --port "$SP" --bind 198.19.255.2 --protected-mode no --save '' \
		--appendonly no \
		--daemonize yes --pidfile "$tmp/store.pid" --logfile "$tmp/store.log" --dir "$tmp" 3>&-
	for _ in $(seq 1 250); do [[ -s $tmp/store.pid ]] && break; sleep 0.02; done
	FLEET_REDIS+=("$(cat "$tmp/store.pid")")
	for d in $FLEET_BENCH_DELAYS; do
		((d == 0)) || ip netns exec "$ST" tc qdisc replace dev "st$$" root netem delay "${d}ms"
		for i in 1 2 3 4; do
			nsenter --net=/var/run/netns/"$FLEET_S" "$TBCTL" -n "${FLEET_H[i - 1]}" fleet run dev "${FLEET_H[i - 1]}" \
				store "redis://198.19.255.2:$SP" host "h$i" interval 10 fleet "d$d" 2>"$tmp/agent$i.err" &
			FLEET_AGENTS+=($!)
		done
		for h in "${FLEET_H[@]}"; do
			for _ in $(seq 1 500); do "$TBCTL" -n "$h" status dev "$h" | grep -q 'agent running' && break; sleep 0.02; done
		done
		move "$d"
		fleet_agents_stop
	done
	ip netns del "$ST"
	exit 0
fi

move 0
fleet_agents_stop

# B. One host, many busy keys: a flood from KEYS sources (a power of two
# at least as many), the agent's CPU over 5 s, the store's commands.
h=${FLEET_H[0]}
fleet_tb "$h" detach dev "$h"
for keys in "${KEYS[@]}"; do
	src=1; while ((src < keys)); do src=$((src * 2)); done
	log "B: $keys busy keys"
	fleet_tb "$h" attach dev "$h" mode xdp max-addrs $((src * 2))
	fleet_tb "$h" rule set dev "$h" 198.18.0.0/15 rate 10kbps burst 20k fleet on
	"$TBCTL" -n "$h" fleet run dev "$h" store "redis://127.0.0.1:$PORT" host hb interval 10 2>"$tmp/agentB.err" &
	agent=$!
	mac=$(netns_mac "$h" "$h")
	nsenter --net=/var/run/netns/"$FLEET_S" "$B/tbbench" gen --dev "s$h" --dmac "$mac" --src 198.18.128.0 \
		--sources "$src" --dst 198.18.1.2 --size 100 --seconds $((SEND_S + 4)) >/dev/null &
	gen=$!
	sleep 2
	c0=$(awk '{ print $14 + $15 }' /proc/$agent/stat)
	k0=$(redis-cli -p "$PORT" info stats | awk -F: '$1 == "total_commands_processed" { print $2 + 0 }')
	sleep "$SEND_S"
	c1=$(awk '{ print $14 + $15 }' /proc/$agent/stat)
	k1=$(redis-cli -p "$PORT" info stats | awk -F: '$1 == "total_commands_processed" { print $2 + 0 }')
	held=$("$TBCTL" -n "$h" -j status dev "$h" | jq '.[0].fleet.keys')
	calls=$("$TBCTL" -n "$h" -j status dev "$h" | jq '.[0].fleet.calls')
	wait $gen || true
	kill $agent; wait $agent || true
	awk -v k="$keys" -v held="$held" -v c="$((c1 - c0))" -v hz="$(getconf CLK_TCK)" -v s="$SEND_S" \
		-v cmds="$((k1 - k0))" -v calls="$calls" 'BEGIN {
		printf "{\"section\": \"fleet-scale\", \"busy_keys\": %d, \"keys_held\": %d, \"agent_cpu\": %.3f, \"store_commands_per_s\": %.0f, \"agent_calls\": %d}\n",
		       k, held, c / hz / s, cmds / s, calls }' >>"$OUTF"
	fleet_tb "$h" detach dev "$h"
done

# C. The simulation and the anchors.
fleet_cluster 3
# The burst: two frames a host, and 0.4 s of rate in all: credit a host
# holds is part of the burst, and each host that sends holds a frame.
SIM_BURST=$((SIM_HOSTS * 1514 * 2 > R * 4 / 10 ? SIM_HOSTS * 1514 * 2 : R * 4 / 10))
sim() {
	"$B/fleetsim" --rate $R --seconds $SIM_S --hosts $SIM_HOSTS --share $((SHARE / 16)) "$@" |
		sed 's/^{/{"section": "fleet-sim", /'
}
for split in "${SIM_SPLITS[@]}"; do
	log "C: $SIM_HOSTS hosts, $split"
	sim --burst $SIM_BURST --store "redis://127.0.0.1:$PORT" --split $split --fleet "s$split" >>"$OUTF"
	sim --burst $SIM_BURST --store "redis-cluster://127.0.0.1:${FLEET_CLUSTER[0]}" --split $split --fleet "c$split" \
		--keys 16 >>"$OUTF"
	sim --burst $SIM_BURST --scheme local --split $split >>"$OUTF"
	sim --burst $SIM_BURST --scheme count --split $split >>"$OUTF"
done
log "C: $SIM_HOSTS hosts, even, clocks seconds apart and 2 % fast or slow, 300 ms leases"
sim --burst $SIM_BURST --store "redis://127.0.0.1:$PORT" --split even --fleet skew --offset 5 --drift 2 \
	--lease 300 >>"$OUTF"
log "C: $SIM_HOSTS hosts, even, with the 4-host burst ($BURST)"
sim --burst $BURST --store "redis://127.0.0.1:$PORT" --split even --fleet small >>"$OUTF"
