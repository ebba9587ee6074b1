#!/usr/bin/env bash
# Writes the performance document from one make bench run: every figure
# in it comes from that run's results.json and tcp.jsonl, with the run's
# stamp (commit, date, CPU, kernels) at its top and its charts beside it.
#   tools/perf_doc.sh RESULTS_DIR DOC_DIR
# writes DOC_DIR/performance.md, and beside it DOC_DIR/performance/ with
# the charts and the raw figures. make bench
# gives DOC_DIR=docs; the smoke run writes into its own results.
set -euo pipefail
in=$1
doc=$2
r=$in/results.json
stamp=$in/stamp.json
for f in "$r" "$in/tcp.jsonl" "$in/tcp.md" "$stamp" "$in/flood.png" "$in/accuracy.png" "$in/tcp.png"; do
	[[ -s $f ]] || { echo "perf_doc: $f is missing or empty: run tools/bench.sh first" >&2; exit 1; }
done
mkdir -p "$doc/performance"
cp "$in/flood.png" "$in/accuracy.png" "$in/tcp.png" "$r" "$in/tcp.jsonl" "$stamp" "$doc/performance/"

{
	jq -r '"# Performance\n",
		"Written by `make bench` (`tools/bench.sh`, then `tools/perf_doc.sh`) from one run: every figure",
		"below comes from it. Commit `\(.commit)`\(if .dirty then " with uncommitted changes" else "" end), \(.date);",
		"\(.cpu), \(.cores) cores, \(.memory_gib) GiB, kernel \(.kernel) (\(.distro)). The sections marked VM",
		"ran in Debian'"'"'s own kernel, \(.vm_kernel), under QEMU (TCG) on the same machine.",
		"\(if .smoke then "\nThis is a **smoke run** (`BENCH_SMOKE=1`): seconds per case, figures not meant to be read.\n" else "" end)"' "$stamp"
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
- The run's raw figures are beside this file: [results.json](performance/results.json),
  [tcp.jsonl](performance/tcp.jsonl) and [stamp.json](performance/stamp.json). The targets are judged here,
  never by the tests (`make test` runs every section for a moment so that none can rot).

EOF
	echo "## Targets"
	echo
	jq -r '"| target | measured | limit | |", "|---|---|---|---|",
		(.targets[] | (.ratio * 10000 | round / 10000) as $x
		 | "| \(.name) | \(if .ratio == null then "not measured" elif $x == .limit and .ratio != .limit
			then (.ratio * 1000000 | round / 1000000) else $x end) | \(.limit) | \(if .met then "met" else "**missed**" end) |")' "$r"
	echo
	echo "## tbctl beside other limiters"
	echo
	echo "The same UDP flood (kernel-side generator), per-source cap $(jq .rate_bytes_per_sec "$r") B/s, burst $(jq .burst_bytes "$r") B:"
	echo
	jq -r '
		def f(x): if x == null then "-" else (x * 100 | round / 100 | tostring) end;
		(.flood | map(.frame_bytes) | min) as $s
		| (.flood | map(.sources) | map(select(. >= 16)) | min // (.flood | map(.sources) | max)) as $n
		| "| limiter (\($s)-byte frames, \($n) sources) | packets/s handled | softirq ns per drop | worst admitted / bound |",
		  "|---|---|---|---|",
		  (.flood[] | select(.driver == "gen" and .frame_bytes == $s and .sources == $n and .limiter != "none")
		   | "| \(.limiter) | \(.handled_pps) | \(f(.softirq_ns_per_drop)) | \(f(.worst_admitted_over_bound)) |"),
		  (.flood[] | select(.limiter == "tbctl-xdp" and .driver == "gen" and .frame_bytes == $s and .sources == $n
			and .handled_pps == .offered_pps)
		   | "\ntbctl XDP handled every frame the generator offered, so the generator set its packets/s: the",
		     "packets/s targets bound it from below, and softirq time per drop is the measure.")' "$r"
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
			| if . == null then "-" else "\(.g | r2) (\(.x))" end) | join(" | ")) + " |")' "$in/tcp.jsonl"
	echo
	echo "## Charts"
	echo
	echo '![The same flood through every limiter: packets/s handled and softirq time per packet](performance/flood.png)'
	echo
	echo '![Admitted rate per source, second by second, for tbctl, an nft meter and hashlimit](performance/accuracy.png)'
	echo
	echo '![TCP goodput in steady state over the ceiling of each limiter, every case](performance/tcp.png)'
	echo
	# results.md's sections but its targets, given first above.
	awk '/^## Targets/ { exit } { print }' "$in/results.md"
	echo
	echo "## TCP, every case"
	echo
	echo "iperf3 (cubic) from one source address through each limiter between two namespaces (\`tools/tcp_bench.sh\`):"
	echo "on this machine's kernel at RTT ≈ 0, and at 100 Mbit/s with build/delayline adding the round trip on the"
	echo "ACK path; in the VM with netem adding it on the ACK path, or half each way in a bridge between the two. Each"
	echo "run leaves out its first seconds, the burst's time and 2 s of slow start (iperf3 -O): the steady state."
	echo
	cat "$in/tcp.md"
} >"$doc/performance.md"
echo "perf_doc: wrote $doc/performance.md and $doc/performance/" >&2
