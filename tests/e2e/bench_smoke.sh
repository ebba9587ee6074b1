#!/usr/bin/env bash
# The benchmark in its seconds-long smoke mode, so it cannot rot: it must
# run and produce every figure. Its numbers are not judged here.
. "$(dirname "$0")/lib.bash"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

BENCH_SMOKE=1 BENCH_OUT=$out "$ROOT/tools/bench.sh" >"$out/stdout" 2>"$out/stderr"
rc=$?
check "bench.sh ran (exit $rc$( ((rc)) && echo ": $(tail -n 3 "$out/stderr")"))" [ "$rc" = 0 ]
r=$out/performance/results.json
check "results.json is JSON" jq -e . "$r" >/dev/null

for k in empty_xdp_ns floor_v4_ns floor_v6_ns xdp_v4_pass_ns xdp_v6_pass_ns tc_v4_pass_ns tc_v6_pass_ns \
	xdp_v6_pass_10k_rules_ns xdp_v4_drop_ns xdp_v6_drop_ns tc_v4_drop_ns tc_v6_drop_ns xdp_v4_drop_events_ns \
	xdp_v6_drop_events_ns; do
	check "per-packet figure $k" jq -e ".micro.per_packet.$k > 0" "$r" >/dev/null
done
for k in xdp_v4_drop_over_floor xdp_v4_pass_over_floor xdp_v6_10k_rules_over_one \
	xdp_v4_1k_matched_pass_over_floor xdp_v4_1k_matched_drop_over_floor xdp_v4_drop_events_over_drop; do
	check "per-packet ratio $k, from interleaved rounds" jq -e ".micro.per_packet.ratios.$k > 0" "$r" >/dev/null
done
for k in floor_ns floor_sized_ns tbctl_ns tbctl_10k_rules_ns tbctl_over_floor tbctl_over_sized_floor \
	ten_k_rules_over_one tbctl_all_over_ns tbctl_all_over_over_floor; do
	check "many-address figure $k" jq -e ".micro.many_addresses.$k > 0" "$r" >/dev/null
done
check "many addresses: the sized floor's state is larger than the floor's" \
	jq -e '.micro.many_addresses | .floor_sized_bytes_per_address > .floor_bytes_per_address' "$r" >/dev/null
# In a table of twice the addresses, those whose set is full evict one
# another: under 1 % of them, each made again on every pass (one more
# than the rounds, 8 by default).
check "many addresses: a bucket for every address, fewer than 1 in 5 made again" \
	jq -e '.micro.many_addresses | .tbctl_buckets_created >= .addresses and
		.tbctl_buckets_created - .addresses <= .addresses / 5' "$r" >/dev/null
check "many addresses all over their limit: every packet counted globally" \
	jq -e '.micro.many_addresses | .all_over_global_packets == .all_over_sent_packets' "$r" >/dev/null
check "and as tbctl reads them, but for the packets of buckets evicted since (at most all of an address's)" \
	jq -e '.micro.many_addresses | .all_over_counted_packets <= .all_over_sent_packets and
		.all_over_sent_packets - .all_over_counted_packets <=
		(.all_over_buckets_created - .addresses) * (.all_over_sent_packets / .addresses)' "$r" >/dev/null
check "many addresses all over their limit: no address admitted more than its first packet" \
	jq -e '.micro.many_addresses | .all_over_admitted_packets > 0 and .all_over_most_admitted_per_address == 1' "$r" >/dev/null
for lim in flood over under; do
	for k in one_cpu_ns two_cpus_ns_per_thread two_cpus_passed_bytes two_cpus_bound_bytes; do
		check "contention ($lim the limit) figure $k" jq -e ".micro.contention.$lim.$k > 0" "$r" >/dev/null
	done
	check "contention ($lim the limit): every packet counted" \
		jq -e ".micro.contention.$lim | .two_cpus_sent_packets == .two_cpus_counted_packets" "$r" >/dev/null
	check "contention ($lim the limit): admitted within b + r*T" \
		jq -e ".micro.contention.$lim | .two_cpus_passed_bytes <= .two_cpus_bound_bytes" "$r" >/dev/null
done
for w in "batch of 10000 rules" "show" "show top 10" "-j show" "check a 100,000-line batch" "rule set during -j show"; do
	check "control plane: $w measured" \
		jq -e --arg w "$w" '[.control[] | select(.what == $w and (.seconds | type == "number") and .seconds >= 0 and .max_rss_kib > 0)] | length >= 1' "$r" >/dev/null
done
check "memory figures" jq -e '[.micro.memory[] | .bytes_per_address > 0 and .other_maps_bytes > 0] | all' "$r" >/dev/null

for lim in none tbctl-xdp tbctl-xdpgeneric tbctl-tc-ingress nft hashlimit; do
	for drv in gen socket; do
		sel=".flood[] | select(.limiter == \"$lim\" and .driver == \"$drv\")"
		check "flood $lim/$drv: packets/s offered and handled" jq -e "$sel | .offered_pps > 0 and .handled_pps > 0" "$r" >/dev/null
		check "flood $lim/$drv: softirq per packet" jq -e "$sel | .softirq_ns_per_packet != null" "$r" >/dev/null
		check "flood $lim/$drv: admitted against the bound for every source" \
			jq -e "$sel | .sources_seen == .sources and .worst_admitted_over_bound > 0" "$r" >/dev/null
		[[ $lim == none ]] ||
			check "flood $lim/$drv: drops and softirq per drop" jq -e "$sel | .dropped_packets > 0 and .softirq_ns_per_drop >= 0" "$r" >/dev/null
	done
done
for lim in tbctl-xdp nft hashlimit; do
	check "accuracy over time: $lim" jq -e "[.accuracy[] | select(.limiter == \"$lim\")] | length >= 4" "$r" >/dev/null
done
# Softirq time is sampled at the clock's ticks: a smoke run's flood can
# fall between them, and a ratio to a zero is none.
check "every target has a measured ratio" \
	jq -e '(.targets | length) == 33 and ([.targets[] | .ratio != null or (.name | test("softirq"))] | all)' "$r" >/dev/null
check "results.md has every section" [ "$(grep -c '^## ' "$out/performance/results.md")" = 9 ]
for sec in fleet-use fleet-move fleet-scale; do
	check "fleet: $sec measured" jq -e "[.fleet[] | select(.section == \"$sec\")] | length >= 1" "$r" >/dev/null
done
for scheme in tbctl local count; do
	check "fleet simulation: $scheme's worst window and use" \
		jq -e "[.fleet[] | select(.section == \"fleet-sim\" and .scheme == \"$scheme\") | .worst_bound_ratio > 0 and .use_mean > 0] | length >= 1 and all" "$r" >/dev/null
done
check "flood.png written" [ -s "$out/flood/flood.png" ]
check "accuracy.png written" [ -s "$out/accuracy/accuracy.png" ]
for lim in tbctl-xdp tbctl-xdpgeneric tbctl-tc-ingress tbctl-tc-egress tbctl-mark nft tbf; do
	check "TCP: $lim has goodput over the cap and its ceiling, and retransmits counted in whole segments, no more than were sent" \
		jq -e -s --arg l "$lim" 'map(select(.limiter == $l)) | length == 1 and (.[0].goodput_over_cap > 0) and
			(.[0].goodput_over_ceiling >= .[0].goodput_over_cap) and .[0].burst_ms == 1000 and .[0].omit_s == 0 and
			(.[0] | (.retransmits | type == "number" and . == floor) and .retransmits <= .segments)' \
		"$out/performance/tcp.jsonl" >/dev/null
done
# At RTT ~ 0 only losses pace TCP through a policer, its window never does:
# one that drops, past a 1 s burst in a 2 s run, makes the sender resend.
for lim in tbctl-xdp tbctl-xdpgeneric tbctl-tc-ingress nft; do
	check "TCP: $lim, a policer that drops, made the sender retransmit" \
		jq -e -s --arg l "$lim" 'map(select(.limiter == $l)) | .[0].retransmits > 0' "$out/performance/tcp.jsonl" >/dev/null
done
check "TCP: tbctl's admitted bytes within b + r*T" \
	jq -e -s 'map(select(.limiter | startswith("tbctl")) | .admitted_over_bound) | all(. > 0 and . <= 1)' "$out/performance/tcp.jsonl" >/dev/null
check "TCP: table and chart" test -s "$out/performance/tcp.md" -a -s "$out/performance/tcp.png"
for sec in micro control flood accuracy fleet tcp-host-10; do
	check "section $sec: its stamp names itself, the commit, the CPU and both kernels" \
		jq -e --arg s "$sec" '.section == $s and .commit != "unknown" and (.cpu | length > 0) and .cores > 0 and
			(.kernel | length > 0) and (.vm_kernel | length > 0) and .smoke' "$out/$sec/stamp.json" >/dev/null
done
doc=$out/performance.md
commit=$(jq -r .commit "$out/micro/stamp.json")
check "performance.md names each section's run: micro's commit ($commit)" grep -qF "| micro | \`$commit\`" "$doc"
check "and marked a smoke run" grep -q 'smoke run' "$doc"
targets=$(grep -cE '^\| .* \| (met|\*\*missed\*\*) \|$' "$doc")
check "performance.md lists every target ($targets)" [ "$targets" = 33 ]
check "performance.md compares tbctl with nft and hashlimit" grep -q '^| hashlimit | ' "$doc"
sections=$(grep -c '^## ' "$doc")
check "performance.md has its own 4 sections and results.md's but its targets, 8 ($sections)" [ "$sections" = 12 ]
for png in flood accuracy tcp; do
	check "performance.md shows $png.png, copied beside it" grep -qF "(performance/$png.png)" "$doc"
	check "performance/$png.png is there" [ -s "$out/performance/$png.png" ]
done
# One section alone, into results of its own: the document is assembled
# from what is there, and says what was not measured.
one=$out/one
BENCH_SMOKE=1 BENCH_OUT=$one "$ROOT/tools/bench.sh" accuracy >"$out/one.stdout" 2>"$out/one.stderr"
check "bench.sh accuracy runs that section alone (exit $?)" [ -s "$one/accuracy/accuracy.jsonl" -a ! -e "$one/micro" ]
check "and performance.md is assembled from it, the micro targets not measured" \
	grep -q '^| hot address, over the limit .* | not measured | ' "$one/performance.md"
BENCH_SMOKE=1 BENCH_OUT=$one "$ROOT/tools/bench.sh" nosuch >/dev/null 2>"$out/nosuch"
check "an unknown section is refused by name (exit $?)" grep -q 'no section "nosuch"' "$out/nosuch"
summary
