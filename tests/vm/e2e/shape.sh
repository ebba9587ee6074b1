#!/usr/bin/env bash
# Action shape end to end on Debian's kernel: tbctl installs fq on the
# sender's egress, a UDP flood to two destinations is paced to each one's
# rate (what leaves fits b + r(T + horizon)), the excess beyond the
# horizon is dropped, and detach removes fq again. Debian 12's kernel has
# no tcx: tbctl's program is its clsact filter there. Without fq, a shape
# rule is refused; with fq replaced later, status and metrics say so and
# detach keeps the replacement.
. "$(dirname "$0")/../../e2e/lib.bash"
setup

SEND_S=3
R=250000; BURST=20000          # 2mbit per destination
HORIZON_MS=100

check "attach tc-egress without fq" tbs attach dev "$DEV_S" mode tc-egress key dst
out=$(tbs rule set dev "$DEV_S" default rate 2mbit action shape 2>&1)
check "shape is refused without fq: $out" [ $? -ne 0 ]
[[ $out == *"needs fq"* ]] && ok "the refusal names fq" || fail "the refusal names fq: $out"
check "detach" tbs detach dev "$DEV_S"

check "attach tc-egress qdisc fq" tbs attach dev "$DEV_S" mode tc-egress key dst qdisc fq
check "status says tbctl's program is its clsact filter (no tcx in 6.1)" \
	bash -c "nsenter --net=/var/run/netns/$NS_S $TBCTL -j status dev $DEV_S | jq -e '.[0].tc_hook == \"clsact\"' >/dev/null"
out=$(tbs attach dev "$DEV_S" tc-hook tcx 2>&1)
check "tc-hook tcx is refused, naming why: $out" grep -qF "this kernel has no tcx (Linux 6.6 added it)" <<<"$out"
check "fq is the root qdisc" bash -c "tc -n $NS_S qdisc show dev $DEV_S root | grep -q '^qdisc fq '"
check "shape rule" tbs rule set dev "$DEV_S" default rate 2mbit burst $BURST action shape horizon ${HORIZON_MS}ms
check "rule list shows the horizon" bash -c "nsenter --net=/var/run/netns/$NS_S $TBCTL rule list dev $DEV_S | grep -q 'action shape scope per-address horizon ${HORIZON_MS}ms'"
in_r "$TBGEN" recv --by dst --seconds $RECV_LIMIT --idle 1 >"$tmp/recv" &
rpid=$!
listening "$NS_R" udp 9000
t0=$(now_ms)
in_s "$TBGEN" send --src 198.18.0.10 --dst 198.18.0.2,198.18.0.3 --seconds $SEND_S --size $PAYLOAD >"$tmp/sent"
t1=$(now_ms)
wait $rpid
# The floor is the rate over the time the sender ran: emulated beside a
# busy host, the guest is sometimes off the CPU, and a sender that offers
# nothing cannot be paced. It must have run for most of the send.
ms() { awk -v k="$1" '$1 == k { printf "%d", $2 * 1000 }' "$tmp/sent"; }
ran=$(($(ms elapsed) - $(ms stalled)))
check "the sender ran $ran ms of $(ms elapsed)" [ $((ran * 2)) -gt $((SEND_S * 1000)) ]
for d in 198.18.0.2 198.18.0.3; do
	got=$(awk -v s="$d" '$1 == s { print $2 }' "$tmp/recv")
	bytes=$((${got:-0} * FRAME4))
	lo=$((R * ran / 1000 * 9 / 10))
	hi=$((BURST + R * (t1 - t0 + HORIZON_MS) / 1000 + FRAME4))
	check "$d received $bytes bytes, bound [$lo, $hi]" between $lo $bytes $hi
done
stats=$(tbs -j stats dev "$DEV_S")
check "packets were delayed ($(jq .delayed_packets <<<"$stats"))" [ "$(jq .delayed_packets <<<"$stats")" -gt 100 ]
check "the excess beyond the horizon was dropped ($(jq .dropped_packets <<<"$stats"))" \
	[ "$(jq .dropped_packets <<<"$stats")" -gt 100 ]
check "detach" tbs detach dev "$DEV_S"
check "detach removed fq" bash -c "! tc -n $NS_S qdisc show dev $DEV_S root | grep -q '^qdisc fq '"

# fq replaced behind tbctl's back: status and the metrics say the shape
# rules go unpaced, and detach leaves the operator's qdisc in place.
paced() { tbs -j status dev "$DEV_S" | jq -c '.[0].shape_paced'; }
metric() { tbs metrics dev "$DEV_S" | awk -v m="tbctl_device_shape_paced{dev=\"$DEV_S\"}" '$1 == m { print $2 }'; }
check "attach qdisc fq again" tbs attach dev "$DEV_S" mode tc-egress key dst qdisc fq
check "status: no shape rule, no shape_paced ($(paced))" [ "$(paced)" = null ]
check "shape rule again" tbs rule set dev "$DEV_S" default rate 2mbit action shape
check "status: shape_paced true ($(paced))" [ "$(paced)" = true ]
check "metrics: tbctl_device_shape_paced 1 ($(metric))" [ "$(metric)" = 1 ]
check "the root qdisc is replaced by pfifo" tc -n "$NS_S" qdisc replace dev "$DEV_S" root pfifo
check "status: shape_paced false ($(paced))" [ "$(paced)" = false ]
check "status text: NOT PACED" bash -c "nsenter --net=/var/run/netns/$NS_S $TBCTL status dev $DEV_S | grep -q 'shape rules NOT PACED'"
check "metrics: tbctl_device_shape_paced 0 ($(metric))" [ "$(metric)" = 0 ]
out=$(tbs detach dev "$DEV_S" 2>&1)
rc=$?
check "detach succeeds (exit $rc)" [ "$rc" = 0 ]
check "and says it left the root qdisc ($out)" grep -q 'no longer the fq tbctl installed; left it in place' <<<"$out"
check "the operator's pfifo is still the root" bash -c "tc -n $NS_S qdisc show dev $DEV_S root | grep -q '^qdisc pfifo '"
summary
