#!/usr/bin/env bash
# The main job, on a private pair of network namespaces: police a flood
# from six sources with per-address caps of different rates, then print
# configured against measured rate per source. Cleans up after itself.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${BUILD:-$ROOT/build}
NS_S=tbdemo-s$$; NS_R=tbdemo-r$$
DEV_S=tbds$$; DEV_R=tbdr$$
SECS=${DEMO_SECONDS:-5}
PAYLOAD=1000
TBCTL=$B/tbctl
. "$ROOT/tools/netns.bash"
netns_session
srcs=(198.18.1.1 198.18.1.2 198.18.2.1 198.18.2.2 2001:db8:1::1 2001:db8:1::2)
for a in 198.18.1.1 198.18.1.2 198.18.2.1 198.18.2.2; do ip -n $NS_S addr add $a/15 dev $DEV_S; done
for a in 2001:db8:1::1 2001:db8:1::2; do ip -n $NS_S addr add $a/32 dev $DEV_S nodad; done
ip -n $NS_R addr add 198.19.0.1/15 dev $DEV_R
ip -n $NS_R addr add 2001:db8::1/32 dev $DEV_R nodad
# Resolve neighbours up front: at 1 Gbit/s of flood the veth's queue would
# drop the first solicitation and stall IPv6 for the 1 s retransmit timer.
netns_neigh $NS_S $DEV_S $NS_R $DEV_R 198.19.0.1 2001:db8::1

echo "# tbctl on $DEV_R (XDP), a UDP flood from ${#srcs[@]} sources for $SECS s"
tb attach dev $DEV_R mode xdp
tb rule set dev $DEV_R default rate 8mbit burst 32k
tb rule set dev $DEV_R 198.18.2.0/24 rate 2mbit burst 16k
tb rule set dev $DEV_R 198.18.2.2 rate 500kbit burst 8k
tb rule set dev $DEV_R 2001:db8:1::/48 rate 4mbit burst 64k
echo "# rules"
tb rule list dev $DEV_R | sed 's/^/  /'

in_r "$B/tbgen" recv --seconds $((SECS + 2)) >"$tmp/recv" &
rpid=$!
sleep 0.5
in_s "$B/tbgen" send --src "$(IFS=,; echo "${srcs[*]}")" --dst 198.19.0.1,2001:db8::1 \
	--seconds "$SECS" --size $PAYLOAD >"$tmp/sent"
wait $rpid
elapsed=$(awk '$1 == "elapsed" { print $2 }' "$tmp/sent")

tb -j show dev $DEV_R >"$tmp/show.json"
tb -j rule list dev $DEV_R >"$tmp/rules.json"
echo
echo "# per source: what it offered, what its rule allows, what arrived (Ethernet frame bytes)"
printf "%-16s %-18s %12s %12s %12s %8s\n" SOURCE RULE OFFERED CONFIGURED MEASURED "MEAS/CFG"
for s in "${srcs[@]}"; do
	frame=$((PAYLOAD + 42)); [[ $s == *:* ]] && frame=$((PAYLOAD + 62))
	sent=$(awk -v s="$s" '$1 == s { print $3 }' "$tmp/sent")
	got=$(awk -v s="$s" '$1 == s { print $2 }' "$tmp/recv")
	rule=$(jq -r --arg a "$s" '.[] | select(.address == $a) | .rule' "$tmp/show.json")
	rate=$(jq -r --arg p "$rule" '.[] | select(.prefix == $p) | .rate_bytes_per_sec' "$tmp/rules.json")
	burst=$(jq -r --arg p "$rule" '.[] | select(.prefix == $p) | .burst_bytes' "$tmp/rules.json")
	awk -v s="$s" -v rule="$rule" -v sent="${sent:-0}" -v got="${got:-0}" -v f=$frame -v r="$rate" \
		-v b="$burst" -v T="$elapsed" 'BEGIN {
		meas = (got * f - b) * 8 / T      # the burst is a one-off, not rate
		printf "%-16s %-18s %10.1fMb %10.2fMb %10.2fMb %8.3f\n", s, rule, sent * f * 8 / T / 1e6,
			r * 8 / 1e6, meas / 1e6, meas / (r * 8)
	}'
done
echo
echo "# measured = (frame bytes received - burst) / send time; 1.000 is the configured rate exactly."
tb stats dev $DEV_R | sed 's/^/  /'
