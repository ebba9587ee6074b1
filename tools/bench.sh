#!/usr/bin/env bash
# make bench: tbctl's benchmarks, side by side with nftables meters,
# iptables hashlimit, tc police and tbf, on private network namespaces,
# in sections that each run alone in under 30 minutes:
#   micro         tbbench micro: per-packet cost, many addresses,
#                 contention, memory
#   control       the control plane (tools/control_bench.sh): a 10,000-rule
#                 batch, show with 65,536 addresses just after a rule change,
#                 checking a 100,000-line batch, -j show of 1M addresses
#   flood         the same UDP flood against every limiter (kernel-side
#                 generator and a socket sender), per-source admitted bytes
#                 against b + r*T
#   accuracy      admitted rate per second, tbctl beside nft and hashlimit
#   fleet         fleet caps (tools/fleet_bench.sh): four hosts on one
#                 redis-server, a move between hosts, the agent at 10,000
#                 and 100,000 busy keys, simulated hosts, the anchors
#   fleet-vm      a move between hosts in Debian's kernel (VM), with 5 and
#                 20 ms more to the store
#   dispatcher-vm what libxdp's dispatcher adds per packet to tbctl's XDP
#                 program (tbbench dispatcher), in Debian's kernel (VM):
#                 this machine's loads no extension programs
#   tcp-host-10, tcp-host-100
#                 TCP in steady state (tools/tcp_bench.sh) on this kernel,
#                 RTT ~ 0, at 10 and 100 Mbit/s
#   tcp-host-rtt20, tcp-host-rtt80
#                 100 Mbit/s at 20 and 80 ms (build/delayline)
#   tcp-vm-rtt{0,20,80}-{1,4}
#                 Debian's kernel (VM), police and shape among the limiters,
#                 one RTT and 1 or 4 flows a section
#   tcp-vm-half20, tcp-vm-half80
#                 the VM, the round trip half each way
# Every TCP section gives each limiter bursts of 1 s, 250, 100 and 50 ms.
#
#   tools/bench.sh [SECTION...]       (none: every section, in this order)
#
# Each section writes $BENCH_OUT/SECTION/ (default bench-results/): its
# stamp.json (commit, date, machine, kernels) and its figures. With
# BENCH_DOCS (make bench: docs) each section that finished replaces its
# copy in BENCH_DOCS/performance/sections/, and tools/perf_doc.sh then
# assembles BENCH_DOCS/performance.md from the latest run of every
# section; else from $BENCH_OUT's. BENCH_SMOKE=1 runs every section for a
# moment (make test), TCP on this kernel only and the VM's fleet not.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${BUILD:-$ROOT/build}
OUT=${BENCH_OUT:-$ROOT/bench-results}
DOCS=${BENCH_DOCS:-}
SMOKE=${BENCH_SMOKE:-0}

SECTIONS=(micro control flood accuracy fleet fleet-vm dispatcher-vm tcp-host-10 tcp-host-100 tcp-host-rtt20 tcp-host-rtt80
	tcp-vm-rtt0-1 tcp-vm-rtt0-4 tcp-vm-rtt20-1 tcp-vm-rtt20-4 tcp-vm-rtt80-1 tcp-vm-rtt80-4
	tcp-vm-half20 tcp-vm-half80)
SMOKE_SECTIONS=(micro control flood accuracy fleet tcp-host-10)

RATE=62500      # bytes/s per source (500 kbit/s)
BURST=62500     # bytes; hashlimit refuses a byte burst below one second of rate
LIMITERS=(none tbctl-xdp tbctl-xdpgeneric tbctl-tc-ingress nft hashlimit)
DRIVERS=(gen socket)
if [[ $SMOKE == 1 ]]; then
	SIZES=(64); SOURCES=(16); FLOOD_S=0.5; ACC_S=2; ACC_EVERY=0.5
	MICRO=(--rounds 3 --repeat 100000 --addrs 65536)
else
	SIZES=(64 1400); SOURCES=(1 16 1024); FLOOD_S=2; ACC_S=8; ACC_EVERY=1
	MICRO=(--rounds 7 --repeat 2000000 --addrs 1048576)
fi

NS_S=tbbench-s$$; NS_R=tbbench-r$$
DEV_S=tbbs$$; DEV_R=tbbr$$
DST=198.19.0.1
HZ=$(getconf CLK_TCK)
TBCTL=$B/tbctl
. "$ROOT/tools/netns.bash"
log() { echo "bench: $*" >&2; }

# stamp DIR SECTION: what this section measured, and where.
stamp() {
	jq -n --arg section "$2" --arg commit "$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)" \
		--arg dirty "$(git -C "$ROOT" status --porcelain --untracked-files=no -- bpf user tools Makefile 2>/dev/null | head -c 1)" \
		--arg date "$(date -u '+%Y-%m-%d %H:%M UTC')" --arg cpu "$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)" \
		--argjson cores "$(nproc)" --argjson mem "$(awk '$1 == "MemTotal:" { printf "%.0f", $2 / 1048576 }' /proc/meminfo)" \
		--arg kernel "$(uname -r)" --arg distro "$(. /etc/os-release && echo "$PRETTY_NAME")" \
		--arg vm "$(ls /boot/vmlinuz-*-amd64 2>/dev/null | sed 's|/boot/vmlinuz-||' | sort -V | tail -n 1)" \
		--arg smoke "$SMOKE" \
		'{ section: $section, commit: $commit, dirty: ($dirty != ""), date: $date, cpu: $cpu, cores: $cores,
		   memory_gib: $mem, kernel: $kernel, distro: $distro, vm_kernel: $vm, smoke: ($smoke == "1") }' >"$1/stamp.json"
}

# The flood and accuracy sections' namespaces: 1024 source addresses
# 198.18.0.0-198.18.3.255 on the sender, made once per run.
floods_ready=0
floods_setup() {
	((floods_ready)) && return
	floods_ready=1
	netns_session
	for i in $(seq 0 1023); do echo "addr add 198.18.$((i / 256)).$((i % 256))/15 dev $DEV_S"; done | ip -n $NS_S -batch -
	ip -n $NS_R addr add $DST/15 dev $DEV_R
	# NAPI on the receiving veth, so the generator's frames can land there
	# without an XDP program; and no ARP to compete with the flood.
	in_r ethtool -K $DEV_R gro on >/dev/null
	MAC_R=$(netns_mac $NS_R $DEV_R)
	netns_neigh $NS_S $DEV_S $NS_R $DEV_R $DST
}

limiter_on() {
	case $1 in
	none) ;;
	tbctl-*)
		tb attach dev $DEV_R mode "${1#tbctl-}" max-addrs 4096
		tb rule set dev $DEV_R default rate ${RATE}bps burst $BURST ;;
	nft)
		in_r nft -f - <<-EOF
		table inet tbbench {
			set meter4 { type ipv4_addr; size 65536; flags dynamic,timeout; timeout 60s; }
			chain input {
				type filter hook input priority 0; policy accept;
				udp dport 9000 update @meter4 { ip saddr limit rate over $RATE bytes/second burst $BURST bytes } counter drop
			}
		}
		EOF
		;;
	hashlimit)
		in_r iptables -A INPUT -p udp --dport 9000 -m hashlimit --hashlimit-name tbbench \
			--hashlimit-mode srcip --hashlimit-above ${RATE}b/s --hashlimit-burst $BURST \
			--hashlimit-htable-size 65536 --hashlimit-htable-max 65536 -j DROP ;;
	esac
}

limiter_off() {
	case $1 in
	tbctl-*) tb detach dev $DEV_R ;;
	nft) in_r nft delete table inet tbbench ;;
	hashlimit) in_r iptables -F INPUT ;;
	esac
}

dropped() {
	case $1 in
	none) echo 0 ;;
	tbctl-*) tb -j stats dev $DEV_R | jq .dropped_packets ;;
	nft) in_r nft -j list table inet tbbench | jq '[.nftables[].rule? // empty | .expr[] | .counter? // empty | .packets] | add // 0' ;;
	hashlimit) in_r iptables -nvxL INPUT | awk 'NR == 3 { print $1 }' ;;
	esac
}

rx_packets() { ip -n $NS_R -j -s link show dev $DEV_R | jq '.[0].stats64.rx.packets'; }
softirq_ticks() { awk '$1 == "cpu" { print $8 }' /proc/stat; }
sources_list() { for i in $(seq 0 $(($1 - 1))); do printf '198.18.%d.%d,' $((i / 256)) $((i % 256)); done | sed 's/,$//'; }

# run_case LIMITER DRIVER FRAME_BYTES SOURCES SECONDS [--every T]: one flood;
# prints one JSON object; leaves the receiver's log in $tmp/recv.
run_case() {
	local lim=$1 drv=$2 size=$3 n=$4 secs=$5 every=${6:-0}
	local rx0 rx1 s0 s1 d0 d1 sent ns
	in_r "$B/tbgen" recv --seconds "$(awk -v s="$secs" 'BEGIN { print s + 1.5 }')" --every "$every" >"$tmp/recv" &
	local rpid=$!
	sleep 0.5
	rx0=$(rx_packets); s0=$(softirq_ticks); d0=$(dropped "$lim")
	if [[ $drv == gen ]]; then
		nsenter --net=/var/run/netns/$NS_S "$B/tbbench" gen --dev $DEV_S --dmac "$MAC_R" --src 198.18.0.0 \
			--sources "$n" --dst $DST --size "$size" --seconds "$secs" >"$tmp/gen"
		sent=$(jq .sent_packets "$tmp/gen"); ns=$(jq .ns "$tmp/gen")
	else
		in_s "$B/tbgen" send --src "$(sources_list "$n")" --dst $DST --size $((size - 42)) --seconds "$secs" >"$tmp/sent"
		sent=$(awk '$1 != "elapsed" && $1 != "stalled" { s += $3 } END { print s + 0 }' "$tmp/sent")
		ns=$(awk '$1 == "elapsed" { printf "%.0f", $2 * 1e9 }' "$tmp/sent")
	fi
	rx1=$(rx_packets); s1=$(softirq_ticks); d1=$(dropped "$lim")
	wait $rpid
	awk -v lim="$lim" -v drv="$drv" -v size="$size" -v n="$n" -v sent="$sent" -v ns="$ns" \
		-v rx=$((rx1 - rx0)) -v soft=$((s1 - s0)) -v hz="$HZ" -v drop=$((d1 - d0)) \
		-v rate=$RATE -v burst=$BURST '
	$1 != "@" { got[$1] = $2 }
	END {
		T = ns / 1e9
		bound = burst + rate * T + size
		worst = 0; over = 0; sum = 0; k = 0
		for (a in got) {
			r = got[a] * size / bound
			if (r > worst) worst = r
			if (r > 1) over++
			sum += r; k++
		}
		soft_ns = soft * 1e9 / hz
		printf "{\"limiter\":\"%s\",\"driver\":\"%s\",\"frame_bytes\":%d,\"sources\":%d,", lim, drv, size, n
		printf "\"seconds\":%.3f,\"offered_pps\":%.0f,\"handled_pps\":%.0f,\"dropped_packets\":%d,", T, sent / T, rx / T, drop
		printf "\"softirq_ns_per_packet\":%.1f,\"softirq_ns_per_drop\":%s,", rx ? soft_ns / rx : 0, drop ? sprintf("%.1f", soft_ns / drop) : "null"
		printf "\"sources_seen\":%d,\"bound_bytes_per_source\":%.0f,", k, bound
		printf "\"worst_admitted_over_bound\":%.4f,\"mean_admitted_over_bound\":%.4f,\"sources_over_bound\":%d}\n", worst, k ? sum / k : 0, over
	}' "$tmp/recv"
}

section_micro() {
	log "micro benchmarks (${MICRO[*]})"
	"$B/tbbench" micro "${MICRO[@]}" >"$1/micro.json"
}

section_control() {
	log "control plane"
	: >"$1/control.jsonl"
	CONTROL_BENCH_BIG=$([[ $SMOKE == 1 ]] && echo 65536 || echo 1048576) \
		"$ROOT/tools/control_bench.sh" --out "$1/control.jsonl"
}

section_flood() {
	floods_setup
	jq -n --argjson r $RATE --argjson b $BURST '{ rate_bytes_per_sec: $r, burst_bytes: $b }' >"$1/limits.json"
	: >"$1/flood.jsonl"
	for lim in "${LIMITERS[@]}"; do
		limiter_on "$lim"
		for drv in "${DRIVERS[@]}"; do
			for size in "${SIZES[@]}"; do
				for n in "${SOURCES[@]}"; do
					log "flood: $lim, $drv, $size-byte frames, $n sources"
					run_case "$lim" "$drv" "$size" "$n" $FLOOD_S >>"$1/flood.jsonl"
				done
			done
		done
		limiter_off "$lim"
	done
	jq -r 'select(.driver == "gen") | "\(.limiter)-\(.frame_bytes)B-\(.sources)src \(.handled_pps) \(.softirq_ns_per_packet)"' \
		"$1/flood.jsonl" >"$tmp/flood.dat"
	gnuplot <<-EOF
	set terminal pngcairo size 1200,600
	set output "$1/flood.png"
	set multiplot layout 1,2 title "Same flood, kernel-side generator"
	set style data histograms
	set style fill solid 0.8
	set xtics rotate by -45 font ",8"
	set title "packets/s handled by the receiver"
	plot "$tmp/flood.dat" using 2:xtic(1) notitle
	set title "softirq ns per packet"
	plot "$tmp/flood.dat" using 3:xtic(1) notitle lc rgb "#cc4444"
	unset multiplot
	EOF
}

# Four sources of 1400-byte frames, admitted bytes per interval.
section_accuracy() {
	floods_setup
	: >"$1/accuracy.jsonl"
	for lim in tbctl-xdp nft hashlimit; do
		limiter_on "$lim"
		log "accuracy over time: $lim"
		run_case "$lim" gen 1400 4 $ACC_S $ACC_EVERY >/dev/null
		awk -v lim="$lim" -v every=$ACC_EVERY '$1 == "@" {
			printf "{\"limiter\":\"%s\",\"t\":%.3f,\"source\":\"%s\",\"bytes_per_sec\":%.0f}\n", lim, $2, $3, $4 * 1400 / every
		}' "$tmp/recv" >>"$1/accuracy.jsonl"
		limiter_off "$lim"
	done
	jq -r '"\(.limiter) \(.t) \(.bytes_per_sec)"' "$1/accuracy.jsonl" |
		awk '{ s[$1" "$2] += $3; c[$1" "$2]++ } END { for (k in s) print k, s[k] / c[k] * 8 / 1e6 }' |
		sort -k1,1 -k2,2n >"$tmp/acc.dat"
	for lim in tbctl-xdp nft hashlimit; do awk -v l=$lim '$1 == l { print $2, $3 }' "$tmp/acc.dat" >"$tmp/acc-$lim.dat"; done
	gnuplot <<-EOF
	set output "$1/accuracy.png"
	set terminal pngcairo size 900,500
	set title "Admitted rate per source over time (mean of 4 sources; cap $((RATE * 8 / 1000)) kbit/s)"
	set xlabel "seconds since the receiver started (traffic from 0.5 s)"
	set ylabel "Mbit/s"
	set key top right
	set style data linespoints
	plot "$tmp/acc-tbctl-xdp.dat" title "tbctl xdp", "$tmp/acc-nft.dat" title "nft meter", \
	     "$tmp/acc-hashlimit.dat" title "hashlimit", $((RATE * 8)) / 1e6 title "configured" with lines dt 2
	EOF
}

section_fleet() {
	log "fleet caps"
	: >"$1/fleet.jsonl"
	FLEET_BENCH_SMOKE=$SMOKE "$ROOT/tools/fleet_bench.sh" --out "$1/fleet.jsonl"
}

section_fleet_vm() {
	log "fleet caps in Debian's kernel (VM): a move with 5 and 20 ms more to the store"
	"$ROOT/tests/vm/run" --timeout 1500 -- env FLEET_BENCH_DELAYS="5 20" "$ROOT/tools/fleet_bench.sh" |
		tr -d '\r' | grep --line-buffered '^{"section"' >"$1/fleet.jsonl"
}

section_dispatcher_vm() {
	log "libxdp's dispatcher's cost per packet, in Debian's kernel (VM)"
	"$ROOT/tests/vm/run" --timeout 600 -- "$B/tbbench" dispatcher --rounds 7 --repeat 1000000 |
		tr -d '\r' | jq -c . >"$1/dispatcher.json"
}

# section_tcp DIR NAME: TCP through every limiter, the cases NAME names.
section_tcp() {
	local out=$1/tcp.jsonl name=$2 rtt flows
	local -a run=(env TCP_BENCH_RUNS="${TCP_BENCH_RUNS:-1}" TCP_BENCH_SECONDS="${TCP_BENCH_SECONDS:-20}"
		TCP_BENCH_BURSTS="${TCP_BENCH_BURSTS:-1000 250 100 50}")
	: >"$out"
	log "TCP: $name"
	if [[ $SMOKE == 1 ]]; then
		# From the start, burst and all: past it, a policer's drops make the sender resend.
		TCP_BENCH_RUNS=1 TCP_BENCH_SECONDS=2 TCP_BENCH_OMIT=0 TCP_BENCH_CAPS=10 TCP_BENCH_FLOWS=1 \
			"$ROOT/tools/tcp_bench.sh" --out "$out"
		return
	fi
	case $name in
	tcp-host-10 | tcp-host-100)
		"${run[@]}" TCP_BENCH_CAPS="${name#tcp-host-}" "$ROOT/tools/tcp_bench.sh" --out "$out" ;;
	tcp-host-rtt*)
		"${run[@]}" TCP_BENCH_CAPS=100 TCP_BENCH_RTTS="${name#tcp-host-rtt}" \
			TCP_BENCH_LIMITERS="tbctl-xdp tbctl-tc-ingress tbctl-mark nft tbf" "$ROOT/tools/tcp_bench.sh" --out "$out" ;;
	tcp-vm-rtt*)
		rtt=${name#tcp-vm-rtt}
		flows=${rtt#*-}
		"$ROOT/tests/vm/run" --timeout 2400 -- "${run[@]}" TCP_BENCH_RTTS="${rtt%-*}" TCP_BENCH_FLOWS="$flows" \
			TCP_BENCH_LIMITERS="tbctl-xdp tbctl-tc-ingress tbctl-mark tbctl-shape nft police tbf" \
			"$ROOT/tools/tcp_bench.sh" --where vm | grep --line-buffered '^{"where"' >>"$out" ;;
	tcp-vm-half*)
		"$ROOT/tests/vm/run" --timeout 2400 -- "${run[@]}" TCP_BENCH_DELAY=both TCP_BENCH_RTTS="${name#tcp-vm-half}" \
			TCP_BENCH_LIMITERS="tbctl-xdp tbctl-mark tbctl-shape police" \
			"$ROOT/tools/tcp_bench.sh" --where vm | grep --line-buffered '^{"where"' >>"$out" ;;
	esac
}

# run_section NAME: into $OUT/NAME, replaced only when it finishes.
run_section() {
	local name=$1 dir=$OUT/$1.new t0=$SECONDS
	rm -rf "$dir"
	mkdir -p "$dir"
	stamp "$dir" "$name"
	case $name in
	tcp-*) section_tcp "$dir" "$name" ;;
	*) "section_${name//-/_}" "$dir" ;;
	esac
	rm -rf "${OUT:?}/$name"
	mv "$dir" "$OUT/$name"
	log "$name: $((SECONDS - t0)) s, in $OUT/$name"
	if [[ -n $DOCS ]]; then
		mkdir -p "$DOCS/performance/sections"
		rm -rf "${DOCS:?}/performance/sections/$name"
		cp -r "$OUT/$name" "$DOCS/performance/sections/$name"
	fi
}

if (($#)); then
	want=("$@")
elif [[ $SMOKE == 1 ]]; then
	want=("${SMOKE_SECTIONS[@]}")
else
	want=("${SECTIONS[@]}")
fi
for w in "${want[@]}"; do
	[[ " ${SECTIONS[*]} " == *" $w "* ]] || { echo "bench: no section \"$w\" (sections: ${SECTIONS[*]})" >&2; exit 2; }
done
mkdir -p "$OUT"
for w in "${want[@]}"; do run_section "$w"; done
if [[ -n $DOCS ]]; then
	"$ROOT/tools/perf_doc.sh" "$DOCS/performance/sections" "$DOCS"
else
	"$ROOT/tools/perf_doc.sh" "$OUT" "$OUT"
fi
