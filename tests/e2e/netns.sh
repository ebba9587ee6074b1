#!/usr/bin/env bash
# One device name in many network namespaces: NS_R's DEV_R and NS_B's
# device of the same name are two attachments, with their own pins, rules
# and counters, each found from the namespace a command runs in, and each
# policing its own traffic. status lists both with their namespace, and
# the metrics label the other's; with CAP_BPF alone both say exactly what
# they say as root. Detach in one leaves the other; a namespace deleted
# with tbctl attached leaves pins that detach ... netns removes once no
# program polices with them, and not before. Pins an earlier
# release keyed by the name alone are taken over by the namespace whose
# device they police, by no other.
. "$(dirname "$0")/lib.bash"
setup

NS_B=tbm$ID
DEV_SB=tbm$ID
NS_C=tbn$ID
session_cleanup() {
	nsenter --net=/var/run/netns/"$NS_C" "$TBCTL" detach dev "$DEV_R" >/dev/null 2>&1
	ip netns del "$NS_C" 2>/dev/null
	[[ -n ${ino_c:-} ]] && rm -rf "/sys/fs/bpf/tbctl/$DEV_R:$ino_c" "/run/tbctl/$DEV_R:$ino_c.lock"
	nsenter --net=/var/run/netns/"$NS_B" "$TBCTL" detach dev "$DEV_R" >/dev/null 2>&1
	rm -f "$(lockfile "$NS_B" "$DEV_R")"
	rm -rf "/sys/fs/bpf/tbctl/$DEV_R"
	ip netns del "$NS_B" 2>/dev/null
}
# NS_B's DEV_R, cabled to DEV_SB in the senders' namespace, on 198.19/16.
ip netns add "$NS_B"
ip link add "$DEV_SB" netns "$NS_S" type veth peer name "$DEV_R" netns "$NS_B"
ip -n "$NS_B" link set lo up
ip -n "$NS_S" link set "$DEV_SB" addrgenmode none up
ip -n "$NS_B" link set "$DEV_R" addrgenmode none up
ip -n "$NS_S" addr add 198.19.0.10/16 dev "$DEV_SB"
ip -n "$NS_B" addr add 198.19.0.2/16 dev "$DEV_R"
netns_neigh "$NS_S" "$DEV_SB" "$NS_B" "$DEV_R" 198.19.0.2
netns_neigh "$NS_B" "$DEV_R" "$NS_S" "$DEV_SB" 198.19.0.10

tbb() { nsenter --net=/var/run/netns/"$NS_B" "$TBCTL" "$@"; }
# CAP_BPF alone, as the read-only commands and the exporter's unit run.
bpf_only() { setpriv --bounding-set=-all,+bpf --inh-caps=-all --no-new-privs "$TBCTL" "$@"; }
# What status -j says of DEV_R's attachments, in a comparable form.
listed() { jq -cS --arg d "$DEV_R" '[.[] | select(.dev == $d) | {netns, attached, device, hook_checked, mode}]
	| sort_by(.netns)'; }

check "attach in $NS_R (xdp)" tb attach dev "$DEV_R" mode xdp
check "attach the same name in $NS_B (tc-ingress): another attachment, not $NS_R's pins" \
	tbb attach dev "$DEV_R" mode tc-ingress
check "each has pins of its own" [ -d "$(pins "$NS_R" "$DEV_R")" -a -d "$(pins "$NS_B" "$DEV_R")" ]
check "a rule in $NS_R" tb rule set dev "$DEV_R" default rate 1mbit burst 10kb
check "another in $NS_B" tbb rule set dev "$DEV_R" default rate 100mbit
v=$(tb rule list dev "$DEV_R")
check "$NS_R lists its own rule ($v)" grep -q '^default rate 1Mbit' <<<"$v"
v=$(tbb rule list dev "$DEV_R")
check "$NS_B lists its own rule ($v)" grep -q '^default rate 100Mbit' <<<"$v"

# 1,000 datagrams of 1,000 bytes to each in half a second: 1mbit drops
# most of them, 100mbit none.
in_s "$TBGEN" send --src 198.18.0.10 --dst 198.18.0.2 --size $PAYLOAD --pps 2000 --seconds 0.5 >/dev/null
in_s "$TBGEN" send --src 198.19.0.10 --dst 198.19.0.2 --size $PAYLOAD --pps 2000 --seconds 0.5 >/dev/null
r=$(tb -j stats dev "$DEV_R" | jq -c '[.passed_packets, .dropped_packets]')
b=$(tbb -j stats dev "$DEV_R" | jq -c '[.passed_packets, .dropped_packets]')
check "$NS_R polices its traffic by its rule: [passed, dropped] $r" \
	bash -c "jq -e '.[1] > 800 and .[0] < 200' <<<'$r' >/dev/null"
check "$NS_B polices its own by its own: $b" bash -c "jq -e '.[0] >= 990 and .[1] == 0' <<<'$b' >/dev/null"

# status: from the root namespace both are another namespace's; from
# NS_R its own is here. XDP out of sight is reported by the pins, a tcx
# link (on kernels with tcx) by the link.
tcx=$(tbb -j status dev "$DEV_R" | jq -r '.[0].tc_hook')
b_checked=$([[ $tcx == tcx ]] && echo true || echo false)
want=$(jq -cnS --arg r "$NS_R" --arg b "$NS_B" --argjson c "$b_checked" '[
	{netns: $b, attached: true, device: "other netns", hook_checked: $c, mode: "tc-ingress"},
	{netns: $r, attached: true, device: "other netns", hook_checked: false, mode: "xdp"}] | sort_by(.netns)')
v=$("$TBCTL" -j status | listed)
check "status in the root namespace lists both, with their namespace ($v)" [ "$v" = "$want" ]
check "  and says the same with CAP_BPF alone" [ "$(bpf_only -j status | listed)" = "$v" ]
v=$(tb -j status | listed)
want_r=$(jq -cS --arg r "$NS_R" 'map(if .netns == $r then .device = "here" | .hook_checked = true else . end)' <<<"$want")
check "status in $NS_R: its own here, $NS_B's elsewhere ($v)" [ "$v" = "$want_r" ]
check "  the same with CAP_BPF alone" \
	[ "$(nsenter --net=/var/run/netns/"$NS_R" setpriv --bounding-set=-all,+bpf --inh-caps=-all --no-new-privs \
		"$TBCTL" -j status | listed)" = "$v" ]
v=$(tb status)
check "status text names the other's namespace" \
	grep -q "^$DEV_R (netns $NS_B): mode tc-ingress" <<<"$v"
check "status dev in $NS_R names only its own" \
	[ "$(tb -j status dev "$DEV_R" | jq -c '[length, .[0].netns, .[0].mode]')" = "[1,\"$NS_R\",\"xdp\"]" ]

# The metrics: this namespace's device by its name, the other's with its
# namespace too, so that the series never collide.
m=$(nsenter --net=/var/run/netns/"$NS_R" "$TBCTL" metrics)
check "metrics in $NS_R: its own device attached" grep -qx "tbctl_device_attached{dev=\"$DEV_R\"} 1" <<<"$m"
check "  and $NS_B's, labelled with its namespace" \
	grep -qx "tbctl_device_attached{dev=\"$DEV_R\",netns=\"$NS_B\"} 1" <<<"$m"
check "  their rules apart" grep -qx \
	"tbctl_rule_rate_bytes_per_second{dev=\"$DEV_R\",netns=\"$NS_B\",rule=\"default\",action=\"drop\"} 12500000" <<<"$m"
check "  the same with CAP_BPF alone" [ "$(nsenter --net=/var/run/netns/"$NS_R" setpriv --bounding-set=-all,+bpf \
	--inh-caps=-all --no-new-privs "$TBCTL" metrics | grep '^tbctl_device_attached')" = \
	"$(grep '^tbctl_device_attached' <<<"$m")" ]

check "detach in $NS_B" tbb detach dev "$DEV_R"
check "  removes its pins only" [ ! -e "$(pins "$NS_B" "$DEV_R")" -a -d "$(pins "$NS_R" "$DEV_R")" ]
check "  and $NS_R still polices, its rule kept" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq -e '.[0].attached' >/dev/null &&
		nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -q '^default rate 1Mbit'"
check "  nothing is left attached in $NS_B" lacks clsact tc -n "$NS_B" qdisc show dev "$DEV_R"

# Pins as an earlier release made them, keyed by the name alone: NS_B's
# attachment moved to /sys/fs/bpf/tbctl/DEV.
check "attach in $NS_B again" tbb attach dev "$DEV_R" mode xdp
check "a rule" tbb rule set dev "$DEV_R" 198.19.0.0/16 rate 3mbit
id=$(tbb -j status dev "$DEV_R" | jq '.[0].prog_id')
mv "$(pins "$NS_B" "$DEV_R")" "/sys/fs/bpf/tbctl/$DEV_R"
check "$NS_R's commands leave $NS_B's unkeyed pins alone" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R >/dev/null &&
		nsenter --net=/var/run/netns/$NS_R $TBCTL status >/dev/null && [ -d /sys/fs/bpf/tbctl/$DEV_R ]"
v=$(tb -j status | jq -c --arg d "$DEV_R" '[.[] | select(.dev == $d and .netns_inode == 0) | .netns]')
check "status lists them as keyed by the name alone ($v)" grep -q 'keyed by the name alone' <<<"$v"
check "an attach in $NS_R leaves them too" tb attach dev "$DEV_R" mode xdp
check "  still unkeyed" [ -d "/sys/fs/bpf/tbctl/$DEV_R" ]
v=$(tbb rule list dev "$DEV_R")
check "the first command in $NS_B takes them over, its rule intact ($v)" \
	bash -c "grep -q '^198.19.0.0/16 rate 3Mbit' <<<'$v' && [ ! -e /sys/fs/bpf/tbctl/$DEV_R ] &&
		[ -d $(pins "$NS_B" "$DEV_R") ]"
check "  the same program policing with them ($id)" \
	[ "$(tbb -j status dev "$DEV_R" | jq -c '[.[0].attached, .[0].prog_id]')" = "[true,$id]" ]
check "detach in $NS_B" tbb detach dev "$DEV_R"

# A third namespace, deleted with tbctl attached.
ip netns add "$NS_C"
ip -n "$NS_C" link add "$DEV_R" type veth peer name "tbnp$ID"
ip -n "$NS_C" link set "$DEV_R" up
ino_c=$(netns_ino "$NS_C")
check "attach in $NS_C" nsenter --net=/var/run/netns/"$NS_C" "$TBCTL" attach dev "$DEV_R" mode xdp
check "detach of $NS_C's pins by its inode refuses while its program polices with them" \
	bash -c "! nsenter --net=/var/run/netns/$NS_R $TBCTL -n $ino_c detach dev $DEV_R 2>$tmp/err &&
		grep -q 'program [0-9]* still polices with its pins there; detach it in that namespace' $tmp/err"
check "  and leaves them" [ -d "/sys/fs/bpf/tbctl/$DEV_R:$ino_c" ]
ip netns del "$NS_C"
check "$NS_C deleted: status lists its pins by the namespace's inode" \
	bash -c "'$TBCTL' -j status | jq -e --arg n 'net:[$ino_c]' 'any(.[]; .netns == \$n)' >/dev/null"
gone_c() { "$TBCTL" -n "$ino_c" detach dev "$DEV_R" 2>/dev/null; }
check "tbctl -n $ino_c detach dev $DEV_R removes them once the kernel has freed its program" \
	within 10 "its program still held" gone_c
check "  all of them" [ ! -e "/sys/fs/bpf/tbctl/$DEV_R:$ino_c" ]
check "detach in $NS_R" tb detach dev "$DEV_R"
check "no pins left for any" bash -c "! ls -d /sys/fs/bpf/tbctl/$DEV_R* 2>/dev/null"
summary
