#!/usr/bin/env bash
# Summarises tcp_bench.sh's JSON lines, the runs of each case averaged: a
# matrix of goodput / cap with retransmitted segments, limiter by case; the
# same per case in full, as Markdown (stdout); and a bar chart of goodput
# / cap.
#   tools/tcp_report.sh RESULTS.jsonl CHART.png
set -euo pipefail
in=$1
png=$2
sum=$(mktemp)
dat=$(mktemp)
trap 'rm -f "$sum" "$dat"' EXIT

# One object per case, in display order.
jq -M -s -c '
	group_by([.where, .rtt_ms, .cap_mbit, .flows, .limiter])
	| map({ where: .[0].where, rtt: .[0].rtt_ms, cap: .[0].cap_mbit, flows: .[0].flows,
		limiter: .[0].limiter, runs: length,
		goodput: (map(.goodput_over_cap) | add / length),
		retrans: (map(.retransmits) | add / length | round),
		admitted: (map(.admitted_over_bound) | if any(. == null) then null else max end) })
	| sort_by(.where != "host", .rtt, .cap, .flows, .limiter)
	| map(. + { case: "\(if .where == "host" then "6.18" else "VM 6.1" end) \(.cap)M \(.rtt)ms \(.flows)f" })
	| .[]' "$in" >"$sum"

jq -M -s -r '
	def r2: . * 100 | round / 100;
	. as $all
	| (map(.case) | reduce .[] as $c ([]; if index([$c]) then . else . + [$c] end)) as $cases
	| group_by(.limiter)
	| (["goodput / cap (retransmits)"] + $cases | "| " + join(" | ") + " |"),
	  ("|" + ([range($cases | length + 1)] | map("---") | join("|")) + "|"),
	  (.[] | . as $rows | [.[0].limiter] + ($cases | map(. as $c | [$rows[] | select(.case == $c)][0]
		| if . == null then "-" else "\(.goodput | r2) (\(.retrans))" end))
		| "| " + join(" | ") + " |"),
	  "",
	  "| kernel | RTT ms | cap Mbit/s | flows | limiter | runs | goodput / cap | retransmits | admitted / (b + r·T), worst |",
	  "|---|---|---|---|---|---|---|---|---|",
	  ($all[]
	   | "| \(if .where == "host" then "6.18 (host)" else "Debian 6.1 (VM)" end) | \(.rtt) | \(.cap) | \(.flows) | \(.limiter) | \(.runs) | \(.goodput | r2) | \(.retrans) | \(if .admitted == null then "-" else (.admitted * 1000 | round / 1000 | tostring) end) |")
' "$sum"

jq -M -r '"\(.limiter)@\(.cap)M/\(.rtt)ms/\(.flows)f\(if .where == "vm" then "/VM" else "" end) \(.goodput)"' "$sum" >"$dat"
gnuplot <<GP
set terminal pngcairo noenhanced size 1600,700
set output "$png"
set title "TCP goodput / cap (iperf3, mean of runs): limiter@cap/RTT/flows (6.18 host, VM: Debian 6.1)"
set style fill solid 0.6
set boxwidth 0.8
set yrange [0:1.6]
set xtics rotate by 60 right font ",8"
set bmargin 12
set grid ytics
plot "$dat" using 0:2:xtic(1) with boxes notitle, 0.95 with lines dt 2 title "0.95"
GP
