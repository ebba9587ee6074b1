#!/usr/bin/env bash
# Writes the performance document from the latest run of every benchmark
# section (tools/bench.sh): each section's figures come from its own run,
# which the document names with its commit, date and machine.
#   tools/perf_doc.sh SECTIONS_DIR DOC_DIR
# reads SECTIONS_DIR/SECTION/ (stamp.json and its figures), and writes
# DOC_DIR/performance.md and, beside it, DOC_DIR/performance/: every
# target judged (results.json, results.md), the TCP cases of every TCP
# section together (tcp.jsonl, tcp.md) and the charts. make bench gives
# docs/performance/sections and docs; the smoke run its own results.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
sec=$1
doc=$2
perf=$doc/performance
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stamps=("$sec"/*/stamp.json)
[[ -e ${stamps[0]} ]] || { echo "perf_doc: no section in $sec: run tools/bench.sh first" >&2; exit 1; }
mkdir -p "$perf"

# Each kind of figure from the sections that have it (none: empty).
cat_if() { local f; for f in "$@"; do [[ -s $f ]] && cat "$f"; done; true; }
cat_if "$sec/micro/micro.json" >"$tmp/micro.json"
cat_if "$sec/control/control.jsonl" >"$tmp/control.jsonl"
cat_if "$sec/flood/flood.jsonl" >"$tmp/flood.jsonl"
cat_if "$sec/flood/limits.json" >"$tmp/limits.json"
cat_if "$sec/accuracy/accuracy.jsonl" >"$tmp/accuracy.jsonl"
cat_if "$sec/fleet/fleet.jsonl" "$sec/fleet-vm/fleet.jsonl" >"$tmp/fleet.jsonl"
cat_if "$sec/dispatcher-vm/dispatcher.json" >"$tmp/dispatcher.json"
cat_if "$sec"/tcp-*/tcp.jsonl >"$perf/tcp.jsonl"
smoke=$(jq -s 'any(.smoke)' "${stamps[@]}")

jq -n --slurpfile micro "$tmp/micro.json" --slurpfile flood "$tmp/flood.jsonl" --slurpfile control "$tmp/control.jsonl" \
	--slurpfile acc "$tmp/accuracy.jsonl" --slurpfile fleet "$tmp/fleet.jsonl" --slurpfile limits "$tmp/limits.json" \
	--slurpfile dispatcher "$tmp/dispatcher.json" \
	--argjson smoke "$smoke" '
	def ratio(a; b): if a != null and b != null and b > 0 then a / b else null end;
	def minus(a; b): if a == null or b == null then null else a - b end;
	def times(k; a): if a == null then null else k * a end;
	def flood(l; d; s; n): first($flood[] | select(.limiter == l and .driver == d and .frame_bytes == s and .sources == n)) // null;
	def control(w; r): first($control[] | select(.what == w and .rules == r)) // null;
	($control | map(.addresses) | max) as $big
	| ($micro[0] // null) as $m
	| ($flood | map(.frame_bytes) | min) as $s
	| ($flood | map(.sources) | map(select(. >= 16)) | min // ($flood | map(.sources) | max)) as $n
	| {
		smoke: $smoke,
		rate_bytes_per_sec: ($limits[0].rate_bytes_per_sec // null), burst_bytes: ($limits[0].burst_bytes // null),
		micro: $m, flood: $flood, accuracy: $acc, control: $control, fleet: $fleet, dispatcher: ($dispatcher[0] // null),
		targets: [
			{ name: "hot address, over the limit (drop path), one CPU: tbctl XDP <= 1.10 x floor",
			  ratio: $m.per_packet.ratios.xdp_v4_drop_over_floor, limit: 1.10 },
			{ name: "hot address, under the limit (admit path), one CPU: tbctl XDP <= 1.30 x floor",
			  ratio: $m.per_packet.ratios.xdp_v4_pass_over_floor, limit: 1.30 },
			{ name: "many addresses: tbctl <= 1.15 x floor over the same keys",
			  ratio: $m.many_addresses.tbctl_over_floor, limit: 1.15 },
			{ name: "10,000 rules <= 1.05 x one rule (many addresses)",
			  ratio: $m.many_addresses.ten_k_rules_over_one, limit: 1.05 },
			{ name: "10,000 rules <= 1.05 x one rule (hot address)",
			  ratio: $m.per_packet.ratios.xdp_v6_10k_rules_over_one, limit: 1.05 },
			{ name: "1,000 rules, a tenth with a port match (admit path): tbctl XDP <= 1.30 x floor",
			  ratio: $m.per_packet.ratios.xdp_v4_1k_matched_pass_over_floor, limit: 1.30 },
			{ name: "1,000 rules, a tenth with a port match (drop path): tbctl XDP <= 1.15 x floor",
			  ratio: $m.per_packet.ratios.xdp_v4_1k_matched_drop_over_floor, limit: 1.15 },
			{ name: "bans, events and SYN/ICMP rules configured, none hit (admit path): <= 1.03 x without them",
			  ratio: $m.per_packet.ratios.xdp_v4_pass_features_over_pass, limit: 1.03 },
			{ name: "bans, events and SYN/ICMP rules configured, none hit (drop path): <= 1.03 x without them",
			  ratio: $m.per_packet.ratios.xdp_v4_drop_features_over_drop, limit: 1.03 },
			{ name: "a packet dropped by a ban by hand costs no more than one dropped over its rate",
			  ratio: $m.per_packet.ratios.xdp_v4_banned_by_hand_over_drop, limit: 1 },
			{ name: "a packet dropped by a ban its rule made costs no more than one dropped over its rate",
			  ratio: $m.per_packet.ratios.xdp_v4_banned_by_rule_over_drop, limit: 1 },
			{ name: "a per-/64 key costs <= 5 ns over a per-address one (hot address)",
			  ratio: ratio(minus($m.per_packet.xdp_v6_pass_per64_ns; $m.per_packet.xdp_v6_pass_ns); 5), limit: 1 },
			{ name: "two CPUs flooding one address (nearly all dropped): per-thread cost <= 1.20 x one CPU",
			  ratio: ratio($m.contention.flood.two_cpus_ns_per_thread; $m.contention.flood.one_cpu_ns), limit: 1.2 },
			{ name: "two CPUs flooding one address: admitted <= b + r*T",
			  ratio: ratio($m.contention.flood.two_cpus_passed_bytes; $m.contention.flood.two_cpus_bound_bytes), limit: 1 },
			{ name: "two CPUs on one address over its limit, a million admissions/s: admitted <= b + r*T",
			  ratio: ratio($m.contention.over.two_cpus_passed_bytes; $m.contention.over.two_cpus_bound_bytes), limit: 1 },
			{ name: "two CPUs on one address, everything admitted: admitted <= b + r*T",
			  ratio: ratio($m.contention.under.two_cpus_passed_bytes; $m.contention.under.two_cpus_bound_bytes), limit: 1 },
			{ name: "two CPUs on one address: every packet counted once (flood, over, under)",
			  ratio: (if $m == null then null
				  elif [$m.contention[] | .two_cpus_counted_packets == .two_cpus_sent_packets] | all
				  then 1 else 2 end), limit: 1 },
			{ name: "kernel memory per tracked address <= 128 bytes (1M table)",
			  ratio: ratio($m.memory.one_million.bytes_per_address; 128), limit: 1 },
			{ name: "flood (generator): tbctl XDP handles >= 3 x the packets/s of nft",
			  ratio: ratio(times(3; flood("nft"; "gen"; $s; $n).handled_pps); flood("tbctl-xdp"; "gen"; $s; $n).handled_pps), limit: 1 },
			{ name: "flood (generator): tbctl XDP handles >= 3 x the packets/s of hashlimit",
			  ratio: ratio(times(3; flood("hashlimit"; "gen"; $s; $n).handled_pps); flood("tbctl-xdp"; "gen"; $s; $n).handled_pps), limit: 1 },
			{ name: "flood (generator): tbctl XDP softirq per drop <= 1/3 of nft",
			  ratio: ratio(times(3; flood("tbctl-xdp"; "gen"; $s; $n).softirq_ns_per_drop); flood("nft"; "gen"; $s; $n).softirq_ns_per_drop), limit: 1 },
			{ name: "flood (generator): tbctl XDP softirq per drop <= 1/3 of hashlimit",
			  ratio: ratio(times(3; flood("tbctl-xdp"; "gen"; $s; $n).softirq_ns_per_drop); flood("hashlimit"; "gen"; $s; $n).softirq_ns_per_drop), limit: 1 },
			{ name: "show, 65,536 addresses and 10,000 rules, just after a rule change: <= 1 s",
			  ratio: control("show"; 10000).seconds, limit: 1 },
			{ name: "show top 10, 65,536 addresses and 10,000 rules, just after a rule change: <= 1 s",
			  ratio: control("show top 10"; 10000).seconds, limit: 1 },
			{ name: "a metrics scrape, 65,536 addresses, 10,000 rules, top 100, just after a rule change: <= 1 s",
			  ratio: control("metrics top 100"; 10000).seconds, limit: 1 },
			{ name: "10,000-rule -batch: <= 2 s",
			  ratio: ratio(control("batch of 10000 rules"; 10000).seconds; 2), limit: 1 },
			{ name: "checking a 100,000-line -batch: <= 2 s",
			  ratio: ratio(control("check a 100,000-line batch"; 1).seconds; 2), limit: 1 },
			{ name: "-j show of \($big) addresses: peak memory <= 64 MB",
			  ratio: ratio((first($control[] | select(.what == "-j show" and .addresses == $big)) // null).max_rss_kib; 65536), limit: 1 },
			{ name: "accuracy: every tbctl source in every run admitted <= b + r*T",
			  ratio: ([$flood[] | select(.limiter | startswith("tbctl")) | .worst_admitted_over_bound] | max), limit: 1 },
			{ name: "fleet, 4 hosts, a client at 2x its cap split evenly, 90/10, on one: every 1 s window >= 0.95 x (r - shares)",
			  ratio: ([$fleet[] | select(.section == "fleet-use") | ratio(0.95 * (1 - .share_of_rate); .use_min)] | max), limit: 1 },
			{ name: "fleet, 4 hosts: every window of 10 ms to 3 s <= b + r*T + shares + a frame a host",
			  ratio: ([$fleet[] | select(.section == "fleet-use") | .worst_bound_ratio] | max), limit: 1 },
			{ name: "fleet: a client moved wholly to another host is back at 0.95 x its cap within 100 ms",
			  ratio: ([$fleet[] | select(.section == "fleet-move" and .added_delay_ms == 0) | .back_ms / 100] | max), limit: 1 },
			{ name: "fleet, simulated hosts on one redis-server and on a 3-master cluster: every window <= b + r*T + shares + a packet a host",
			  ratio: ([$fleet[] | select(.section == "fleet-sim" and .scheme == "tbctl") | .worst_bound_ratio] | max), limit: 1 }
		] | map(. + { met: (.ratio != null and .ratio <= .limit) })
	}' >"$perf/results.json"

jq -r '
	def f(x): if x == null then "-" else (x * 100 | round / 100 | tostring) end;
	(select(.micro) |
	"## Per-packet cost (BPF_PROG_TEST_RUN, 64-byte frames, median ns)\n",
	"| program | IPv4 | IPv6 |", "|---|---|---|",
	"| empty XDP | \(.micro.per_packet.empty_xdp_ns) | |",
	"| floor (parse, clock, one hash lookup and write) | \(.micro.per_packet.floor_v4_ns) | \(.micro.per_packet.floor_v6_ns) |",
	"| tbctl XDP, under the limit | \(.micro.per_packet.xdp_v4_pass_ns) | \(.micro.per_packet.xdp_v6_pass_ns) |",
	"| tbctl XDP, over the limit | \(.micro.per_packet.xdp_v4_drop_ns) | \(.micro.per_packet.xdp_v6_drop_ns) |",
	"| tbctl XDP, over the limit, events on (sampled out) | \(f(.micro.per_packet.xdp_v4_drop_events_ns)) | \(f(.micro.per_packet.xdp_v6_drop_events_ns)) |",
	"| tbctl XDP, bans, events and SYN/ICMP rules configured, none hit: under the limit | \(f(.micro.per_packet.xdp_v4_pass_features_ns)) | |",
	"| the same, over the limit | \(f(.micro.per_packet.xdp_v4_drop_features_ns)) | |",
	"| tbctl XDP, banned by hand | \(f(.micro.per_packet.xdp_v4_banned_by_hand_ns)) | \(f(.micro.per_packet.xdp_v6_banned_by_hand_ns)) |",
	"| tbctl XDP, banned by its rule | \(f(.micro.per_packet.xdp_v4_banned_by_rule_ns)) | \(f(.micro.per_packet.xdp_v6_banned_by_rule_ns)) |",
	"| tbctl tc, under the limit | \(.micro.per_packet.tc_v4_pass_ns) | \(.micro.per_packet.tc_v6_pass_ns) |",
	"| tbctl tc, over the limit | \(.micro.per_packet.tc_v4_drop_ns) | \(.micro.per_packet.tc_v6_drop_ns) |",
	"| tbctl XDP, 10,000 rules installed | | \(.micro.per_packet.xdp_v6_pass_10k_rules_ns) |",
	"| tbctl XDP, ::/0 scope per-/64 | | \(.micro.per_packet.xdp_v6_pass_per64_ns) |",
	"\n## \(.micro.many_addresses.addresses) live addresses, each run in an order of its own (ns per packet)\n",
	"| floor (\(.micro.many_addresses.floor_bytes_per_address) B/address) | floor, its state as large as a tbctl bucket (\(.micro.many_addresses.floor_sized_bytes_per_address) B/address) | tbctl, 1 rule | tbctl, 10,000 rules | tbctl, every address over its limit (admitted / counted / sent) |", "|---|---|---|---|---|",
	"| \(f(.micro.many_addresses.floor_ns)) | \(f(.micro.many_addresses.floor_sized_ns)) | \(f(.micro.many_addresses.tbctl_ns)) | \(f(.micro.many_addresses.tbctl_10k_rules_ns)) | \(f(.micro.many_addresses.tbctl_all_over_ns)) (\(.micro.many_addresses.all_over_admitted_packets) / \(.micro.many_addresses.all_over_counted_packets) / \(.micro.many_addresses.all_over_sent_packets)) |",
	"\n## Contention: one address (ns per packet per thread)\n",
	"| case | one CPU | two CPUs | packets admitted / sent (two CPUs) | admitted bytes | b + r*T | packets counted |", "|---|---|---|---|---|---|---|",
	(.micro.contention | to_entries[] | "| \(.key) | \(f(.value.one_cpu_ns)) | \(f(.value.two_cpus_ns_per_thread)) | \(.value.two_cpus_admitted_packets) / \(.value.two_cpus_sent_packets) | \(.value.two_cpus_passed_bytes) | \(.value.two_cpus_bound_bytes) | \(.value.two_cpus_counted_packets) |"),
	"\n## Memory (kernel accounting of the per-address table)\n",
	"| max-addrs | table bytes | bytes per address | other maps |", "|---|---|---|---|",
	(.micro.memory[] | "| \(.max_addrs) | \(.table_bytes) | \(f(.bytes_per_address)) | \(.other_maps_bytes) |"),
	""),
	(select(.flood | length > 0) |
	"\n## The same flood, per-source cap \(.rate_bytes_per_sec) B/s, burst \(.burst_bytes) B\n",
	"| limiter | driver | frame | sources | offered pps | handled pps | softirq ns/pkt | softirq ns/drop | admitted/bound worst (mean) | sources over |",
	"|---|---|---|---|---|---|---|---|---|---|",
	(.flood[] | "| \(.limiter) | \(.driver) | \(.frame_bytes) | \(.sources) | \(.offered_pps) | \(.handled_pps) | \(f(.softirq_ns_per_packet)) | \(f(.softirq_ns_per_drop)) | \(f(.worst_admitted_over_bound)) (\(f(.mean_admitted_over_bound))) | \(.sources_over_bound)/\(.sources_seen) |"),
	""),
	(select(.control | length > 0) |
	"\n## Control plane (time and peak memory of tbctl)\n",
	"| what | addresses | rules | seconds | peak RSS KiB |", "|---|---|---|---|---|",
	(.control[] | "| \(.what) | \(.addresses) | \(.rules) | \(.seconds) | \(.max_rss_kib) |"),
	""),
	(select(.fleet | length > 0) |
	"\n## Fleet caps (4 hosts in namespaces, one redis-server on loopback)\n",
	"| split | 1 s windows | use: min | mean | shares (of r) | worst window / bound |", "|---|---|---|---|---|---|",
	(.fleet[] | select(.section == "fleet-use") | "| \(.split) | \(.windows) | \(f(.use_min)) | \(f(.use_mean)) | \(f(.share_of_rate)) | \(f(.worst_bound_ratio)) |"),
	"\nMoved wholly to another host: back at 0.95 of the cap after\n",
	(.fleet[] | select(.section == "fleet-move") | "- \(.back_ms) ms with \(.added_delay_ms) ms added to the store (its round trip, as the agent saw it: \(.store_rtt_us) us)"),
	"",
	"| busy keys (one host) | keys held | agent CPU (cores) | store commands/s | agent calls |", "|---|---|---|---|---|",
	(.fleet[] | select(.section == "fleet-scale") | "| \(.busy_keys) | \(.keys_held) | \(f(.agent_cpu)) | \(.store_commands_per_s) | \(.agent_calls) |"),
	"\n## Fleet caps simulated, beside the anchors (fleetsim, real time, a client at twice its cap)\n",
	"| scheme | store | hosts | keys | split | burst | clocks: offset s, drift % | worst window / bound | use: min | mean | store calls/s | commands/s | agent CPU |",
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|",
	(.fleet[] | select(.section == "fleet-sim") | "| \(.scheme) | \(.store) | \(.hosts) | \(.keys) | \(.split) | \(.burst) | \(.offset_s), \(.drift_pct) | \(f(.worst_bound_ratio)) | \(f(.use_min)) | \(f(.use_mean)) | \(.store_calls_per_s) | \(.store_commands_per_s) | \(f(.agent_cpu_per_s)) |"),
	""),
	(select(.dispatcher != null) |
	"\n## libxdp'"'"'s dispatcher (Debian'"'"'s kernel under QEMU TCG: emulated, ns are not the host'"'"'s)\n",
	"| tbctl alone, admit | a program that passes all | the dispatcher holding both | the dispatcher'"'"'s own cost |",
	"|---|---|---|---|",
	"| \(f(.dispatcher.xdp_v4_pass_ns)) | \(f(.dispatcher.pass_all_ns)) | \(f(.dispatcher.dispatcher_two_ns)) | \(f(.dispatcher.dispatcher_cost_ns)) |",
	""),
	"\n## Targets\n",
	"| target | measured ratio | limit | |", "|---|---|---|---|",
	(.targets[] | "| \(.name) | \(f(.ratio)) | \(.limit) | \(if .met then "met" else "MISSED" end) |")
'  "$perf/results.json" >"$perf/results.md"

for png in flood accuracy; do
	if [[ -s $sec/$png/$png.png ]]; then cp "$sec/$png/$png.png" "$perf/"; else rm -f "$perf/$png.png"; fi
done
if [[ -s $perf/tcp.jsonl ]]; then
	"$ROOT/tools/tcp_report.sh" "$perf/tcp.jsonl" "$perf/tcp.png" >"$perf/tcp.md"
else
	echo "No TCP section has run." >"$perf/tcp.md"
	rm -f "$perf/tcp.png"
fi

{
	echo "# Performance"
	echo
	echo "Written by \`make bench\` (\`tools/bench.sh\`, then \`tools/perf_doc.sh\`) from the latest run of each"
	echo "section: every figure below comes from the run of its section, which the table names. \`make bench"
	echo "SECTION=NAME\` runs one section again (each takes under 30 minutes) and rewrites this document."
	jq -s -r '"\nThe sections named vm ran in Debian'"'"'s own kernel (\([.[].vm_kernel] | unique | join(", "))) under QEMU",
		"(TCG), on the machine their row names.",
		(if any(.smoke) then "\nThis is a **smoke run** (`BENCH_SMOKE=1`): seconds per case, figures not meant to be read.\n" else "" end),
		"\n| section | commit | date | machine |", "|---|---|---|---|",
		(sort_by(.section)[] | "| \(.section) | `\(.commit)`\(if .dirty then " (uncommitted changes)" else "" end) | \(.date) | \(.cpu), \(.cores) cores, kernel \(.kernel) |")' \
		"${stamps[@]}"
	cat <<'EOF'

How to read it:
- The *floor* is the least any per-address policer must do per packet: parse Ethernet and IP, read the clock,
  look up and write one hash entry. `tbbench` times what it compares in interleaved rounds (floor, tbctl, floor,
  ...) and gives each ratio as the median of the rounds' ratios, so a change in the machine's speed shifts a whole
  round alike. Absolute nanoseconds move far between machines; compare the ratios.
- *Admitted / bound* is a source's received bytes over `burst + rate × T + one frame`: above 1 is
  over-admission.
- TCP *goodput / ceiling* is iperf3's payload rate in steady state (each run's burst and slow start left
  out) over the most the limiter can give: tbctl and tbf charge Ethernet frames, so a limiter that passes
  exactly its cap gives 1448 / 1514 ≈ 0.956 of it; police and nft charge an aggregate once, so theirs is the
  cap. [tcp.md](tcp.md) says what the TCP figures mean for choosing an action and a burst.
- The raw figures are beside this file: each section's in [performance/sections/](performance/sections/),
  every target's in [results.json](performance/results.json) and every TCP case in
  [tcp.jsonl](performance/tcp.jsonl). The targets are judged here, never by the tests (`make test` runs
  every section for a moment so that none can rot).

EOF
	echo "## Targets"
	echo
	jq -r '"| target | measured | limit | |", "|---|---|---|---|",
		(.targets[] | (if .ratio == null then null else .ratio * 10000 | round / 10000 end) as $x
		 | "| \(.name) | \(if .ratio == null then "not measured" elif $x == .limit and .ratio != .limit
			then (.ratio * 1000000 | round / 1000000) else $x end) | \(.limit) | \(if .met then "met" else "**missed**" end) |")' "$perf/results.json"
	echo
	echo "## tbctl beside other limiters"
	echo
	echo "The same UDP flood (kernel-side generator), per-source cap $(jq .rate_bytes_per_sec "$perf/results.json") B/s, burst $(jq .burst_bytes "$perf/results.json") B:"
	echo
	jq -r '
		def f(x): if x == null then "-" else (x * 100 | round / 100 | tostring) end;
		if (.flood | length) == 0 then "The flood section has not run." else
		(.flood | map(.frame_bytes) | min) as $s
		| ((.flood | map(.sources) | map(select(. >= 16)) | min) // (.flood | map(.sources) | max)) as $n
		| "| limiter (\($s)-byte frames, \($n) sources) | packets/s handled | softirq ns per drop | worst admitted / bound |",
		  "|---|---|---|---|",
		  (.flood[] | select(.driver == "gen" and .frame_bytes == $s and .sources == $n and .limiter != "none")
		   | "| \(.limiter) | \(.handled_pps) | \(f(.softirq_ns_per_drop)) | \(f(.worst_admitted_over_bound)) |"),
		  (.flood[] | select(.limiter == "tbctl-xdp" and .driver == "gen" and .frame_bytes == $s and .sources == $n
			and .handled_pps == .offered_pps)
		   | "\ntbctl XDP handled every frame the generator offered, so the generator set its packets/s: the",
		     "packets/s targets bound it from below, and softirq time per drop is the measure.") end' "$perf/results.json"
	echo
	echo "TCP in steady state, goodput / the limiter's ceiling and retransmitted segments, mean of the runs of each case:"
	echo
	jq -M -s -r '
		def r2: . * 100 | round / 100;
		map(select(.limiter | test("^(tbctl-xdp|tbctl-mark|tbctl-shape|nft|police|tbf)$")))
		| map(.delay //= "ack")
		| group_by([.where, .rtt_ms, .delay, .cap_mbit, -.burst_ms, .flows, .limiter])
		| map({ c: "\(if .[0].where == "host" then "host" else "VM" end) \(.[0].cap_mbit) Mbit/s, RTT \(.[0].rtt_ms) ms\(if .[0].delay == "both" then " (half each way)" else "" end), burst \(.[0].burst_ms) ms, \(.[0].flows) flow\(if .[0].flows > 1 then "s" else "" end)",
			l: .[0].limiter, g: (map(.goodput_over_ceiling) | add / length), x: (map(.retransmits) | add / length | round) })
		| (map(.l) | unique) as $ls
		| (map(.c) | reduce .[] as $c ([]; if index([$c]) then . else . + [$c] end)) as $cs
		| . as $all
		| ("| case | " + ($ls | join(" | ")) + " |"),
		  ("|---|" + ($ls | map("---") | join("|")) + "|"),
		  ($cs[] as $c | "| \($c) | " + ($ls | map(. as $l | [$all[] | select(.c == $c and .l == $l)][0]
			| if . == null then "-" else "\(.g | r2) (\(.x))" end) | join(" | ")) + " |")' "$perf/tcp.jsonl"
	echo
	echo "## Charts"
	echo
	[[ -s $perf/flood.png ]] &&
		printf '%s\n\n' '![The same flood through every limiter: packets/s handled and softirq time per packet](performance/flood.png)'
	[[ -s $perf/accuracy.png ]] &&
		printf '%s\n\n' '![Admitted rate per source, second by second, for tbctl, an nft meter and hashlimit](performance/accuracy.png)'
	[[ -s $perf/tcp.png ]] &&
		printf '%s\n\n' '![TCP goodput in steady state over the ceiling of each limiter, every case](performance/tcp.png)'
	# results.md's sections but its targets, given first above.
	awk '/^## Targets/ { exit } { print }' "$perf/results.md"
	echo
	echo "## TCP, every case"
	echo
	echo "iperf3 (cubic) from one source address through each limiter between two namespaces (\`tools/tcp_bench.sh\`):"
	echo "on this machine's kernel at RTT ≈ 0, and at 100 Mbit/s with build/delayline adding the round trip on the"
	echo "ACK path; in the VM with netem adding it on the ACK path, or half each way in a bridge between the two. Each"
	echo "run leaves out its first seconds, the burst's time and 2 s of slow start (iperf3 -O): the steady state."
	jq -s -r '[.[] | select(.omit_s == 0) | .where + " " + (.rtt_ms | tostring)] | unique
		| if length > 0 then "Runs whose section measured from the start, burst and slow start in (omit 0 s): \(join(", ")) ms RTT." else empty end' \
		"$perf/tcp.jsonl"
	echo
	cat "$perf/tcp.md"
} >"$doc/performance.md"
echo "perf_doc: wrote $doc/performance.md and $perf/" >&2
