#!/usr/bin/env bash
# The control plane at scale: tbctl's time and memory for a rule batch and
# for show with a full address table, every bucket's cached rule one
# generation old (as just after a rule change).
#
#   tools/control_bench.sh [--out FILE.jsonl] [--big N]
#
# One JSON object per measurement: what ran, the table's addresses and
# rules, seconds and the process's peak resident memory (KiB). The
# addresses are put straight into the pinned table (tbbench fill); the
# veth the table belongs to carries no traffic. --big sets the large
# table (default 1,048,576 addresses; CONTROL_BENCH_BIG likewise).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${BUILD:-$ROOT/build}
TBCTL=$B/tbctl
OUT=/dev/stdout
BIG=${CONTROL_BENCH_BIG:-1048576}
while (($#)); do
	case $1 in
	--out) OUT=$2; shift 2 ;;
	--big) BIG=$2; shift 2 ;;
	*) echo "control_bench: unknown option $1" >&2; exit 2 ;;
	esac
done

NS_S=ctlb-s$$; NS_R=ctlb-r$$
DEV_S=ctlbs$$; DEV_R=ctlbr$$
. "$ROOT/tools/netns.bash"
netns_session

# measure WHAT ADDRS RULES COMMAND...: run it (output discarded), record
# the elapsed seconds and peak RSS.
measure() {
	local what=$1 addrs=$2 rules=$3
	shift 3
	/usr/bin/time -f '%e %M' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" ||
		{ echo "control_bench: $what failed: $(tail -n 2 "$tmp/err")" >&2; exit 1; }
	read -r secs rss <"$tmp/time"
	jq -M -c -n --arg what "$what" --argjson addrs "$addrs" --argjson rules "$rules" \
		--argjson secs "$secs" --argjson rss "$rss" \
		'{ what: $what, addresses: $addrs, rules: $rules, seconds: $secs, max_rss_kib: $rss }' >>"$OUT"
	echo "control_bench: $what, $addrs addresses, $rules rules: $secs s, $rss KiB" >&2
}

IN_R=(nsenter --net=/var/run/netns/"$NS_R")

# rules_file N: the default rule and N-1 /48s.
rules_file() {
	echo "rule set dev $DEV_R default rate 10mbit"
	for ((i = 1; i < $1; i++)); do printf 'rule set dev %s 2001:db8:%x::/48 rate 20mbit\n' "$DEV_R" "$i"; done
}

# A table of twice the addresses, as docs/design.md's "The table" advises: fill
# leaves out the few whose set is full, and says how many it put in.
for rules in 1 1000 10000; do
	tb attach dev "$DEV_R" max-addrs 131072 >/dev/null
	rules_file "$rules" >"$tmp/rules"
	measure "batch of $rules rules" 0 "$rules" "${IN_R[@]}" "$TBCTL" -batch "$tmp/rules"
	n=$("${IN_R[@]}" "$B/tbbench" fill --dev "$DEV_R" --addrs 65536 | jq .placed)
	measure "show" "$n" "$rules" "${IN_R[@]}" "$TBCTL" show dev "$DEV_R"
	tb rule set dev "$DEV_R" default rate 10mbit
	measure "show top 10" "$n" "$rules" "${IN_R[@]}" "$TBCTL" show dev "$DEV_R" top 10
	tb rule set dev "$DEV_R" default rate 10mbit
	measure "-j show" "$n" "$rules" "${IN_R[@]}" "$TBCTL" -j show dev "$DEV_R"
	tb rule set dev "$DEV_R" default rate 10mbit
	measure "metrics top 100" "$n" "$rules" "${IN_R[@]}" "$TBCTL" metrics dev "$DEV_R" top 100
	tb detach dev "$DEV_R"
done

# Checking a 100,000-line batch (the last line is bad, so nothing runs):
# 50,000 rule sets, then deletes of all but one of them.
tb attach dev "$DEV_R" >/dev/null
{
	for ((i = 0; i < 50000; i++)); do printf 'rule set dev %s 2001:db8:%x:%x::/64 rate 1mbit\n' "$DEV_R" $((i >> 8)) $((i & 255)); done
	for ((i = 0; i < 49999; i++)); do printf 'rule del dev %s 2001:db8:%x:%x::/64\n' "$DEV_R" $((i >> 8)) $((i & 255)); done
	echo "rule set dev $DEV_R default rate 1foo"
} >"$tmp/check"
/usr/bin/time -f '%e %M' -o "$tmp/time" "${IN_R[@]}" "$TBCTL" -batch "$tmp/check" >/dev/null 2>"$tmp/err" &&
	{ echo "control_bench: the bad batch was accepted" >&2; exit 1; }
read -r secs rss < <(tail -n 1 "$tmp/time")
jq -M -c -n --argjson secs "$secs" --argjson rss "$rss" \
	'{ what: "check a 100,000-line batch", addresses: 0, rules: 1, seconds: $secs, max_rss_kib: $rss }' >>"$OUT"
echo "control_bench: check a 100,000-line batch: $secs s, $rss KiB" >&2
tb detach dev "$DEV_R"

tb attach dev "$DEV_R" max-addrs $((2 * BIG)) >/dev/null
tb rule set dev "$DEV_R" default rate 10mbit
n=$("${IN_R[@]}" "$B/tbbench" fill --dev "$DEV_R" --addrs "$BIG" | jq .placed)
measure "-j show" "$n" 1 "${IN_R[@]}" "$TBCTL" -j show dev "$DEV_R"
# A writer during a long read: show takes no lock, so the change does not wait.
"${IN_R[@]}" "$TBCTL" -j show dev "$DEV_R" >/dev/null &
reader=$!
sleep 0.2
measure "rule set during -j show" "$n" 1 "${IN_R[@]}" "$TBCTL" rule set dev "$DEV_R" default rate 20mbit
wait "$reader"
tb detach dev "$DEV_R"
