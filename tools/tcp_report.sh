#!/usr/bin/env bash
# Summarises tcp_bench.sh's JSON lines, the runs of each case averaged: a
# matrix of goodput over each limiter's ceiling with retransmitted
# segments, case by limiter, where a case at RTT 0 also shows what tail
# drop gets there with a small burst, burst / (rate x 200 ms); the same
# per case in full, as Markdown (stdout); and a bar chart of goodput over
# the ceiling.
#   tools/tcp_report.sh RESULTS.jsonl CHART.png
set -euo pipefail
in=$1
png=$2
sum=$(mktemp)
dat=$(mktemp)
trap 'rm -f "$sum" "$dat"' EXIT

# One object per case, in display order.
jq -M -s -c '
	map(.delay //= "ack")
	| group_by([.where, .rtt_ms, .delay, .cap_mbit, .burst_ms, .flows, .limiter])
	| map({ where: .[0].where, rtt: .[0].rtt_ms, delay: .[0].delay, cap: .[0].cap_mbit, burst: .[0].burst_ms, flows: .[0].flows,
		limiter: .[0].limiter, runs: length,
		goodput: (map(.goodput_over_cap) | add / length),
		ceil: (map(.goodput_over_ceiling) | add / length),
		retrans: (map(.retransmits) | add / length | round),
		signals: (map(.signals) | if any(. == null) then null else add / length | round end),
		tails: (map(.tail_drops) | if any(. == null) then null else add / length | round end),
		admitted: (map(.admitted_over_bound) | if any(. == null) then null else max end) })
	| map(. + { limit: (if .rtt == 0 and .burst < 200 then .burst / 200 else null end) })
	| map(. + { rttl: "\(.rtt)ms\(if .delay == "both" then " half each way" else "" end)" })
	| sort_by(.where != "host", .rtt, .delay, .cap, -.burst, .flows, .limiter)
	| map(. + { case: "\(if .where == "host" then "6.18" else "VM 6.1" end) \(.cap)M \(.rttl) \(.burst)ms \(.flows)f" })
	| .[]' "$in" >"$sum"

jq -M -s -r '
	def r2: . * 100 | round / 100;
	. as $all
	| (map(.limiter) | unique) as $ls
	| (map(.case) | reduce .[] as $c ([]; if index([$c]) then . else . + [$c] end)) as $cs
	| ("| goodput / ceiling (retransmits) | RTT 0 tail-drop limit | " + ($ls | join(" | ")) + " |"),
	  ("|---|---|" + ($ls | map("---") | join("|")) + "|"),
	  ($cs[] as $c | [$all[] | select(.case == $c)] as $rows
		| "| \($c) | \($rows[0].limit | if . == null then "-" else r2 end) | " + ($ls | map(. as $l | [$rows[] | select(.limiter == $l)][0]
			| if . == null then "-" else "\(.ceil | r2) (\(.retrans))" end) | join(" | ")) + " |"),
	  "",
	  "| kernel | RTT | cap Mbit/s | burst ms | flows | limiter | runs | goodput / cap | goodput / ceiling | retransmits | signals, tail drops (tbctl, whole run) | admitted / (b + r·T), worst |",
	  "|---|---|---|---|---|---|---|---|---|---|---|---|",
	  ($all[]
	   | "| \(if .where == "host" then "6.18 (host)" else "Debian 6.1 (VM)" end) | \(.rttl) | \(.cap) | \(.burst) | \(.flows) | \(.limiter) | \(.runs) | \(.goodput | r2) | \(.ceil | r2) | \(.retrans) | \(if .signals == null then "-" else "\(.signals), \(.tails)" end) | \(if .admitted == null then "-" else (.admitted * 1000 | round / 1000 | tostring) end) |")
' "$sum"

# Label, goodput / ceiling, and the RTT 0 tail-drop limit where there is one (NaN: none).
jq -M -r '"\(.limiter)@\(.cap)M/\(.rtt)ms\(if .delay == "both" then "(both)" else "" end)/\(.burst)ms/\(.flows)f\(if .where == "vm" then "/VM" else "" end) \(.ceil) \(.limit // "NaN")"' "$sum" >"$dat"
width=$(($(wc -l <"$dat") * 14))
((width >= 1600)) || width=1600
gnuplot <<GP
set terminal pngcairo noenhanced size $width,700
set output "$png"
set title "TCP goodput / the limiter's ceiling (iperf3, steady state, mean of runs): limiter@cap/RTT/burst/flows (6.18 host, VM: Debian 6.1)"
set style fill solid 0.6
set boxwidth 0.8
set yrange [0:1.6]
set xtics rotate by 60 right font ",8"
set bmargin 12
set grid ytics
plot "$dat" using 0:2:xtic(1) with boxes notitle, "$dat" using 0:3 with points pt 7 lc rgb "red" \\
	title "RTT 0 tail-drop limit, burst / (rate x 200 ms)", 0.97 with lines dt 2 title "0.97"
GP
