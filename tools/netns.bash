# Sourced by the tests, the demo and the benchmark: a pair of network
# namespaces joined by a veth pair, and its teardown. Only the caller's own
# namespaces and links are touched. Callers name them NS_S/DEV_S (sender)
# and NS_R/DEV_R (receiver), and the tbctl binary TBCTL.

# tbctl in a namespace: nsenter, not "ip netns exec", which remounts /sys
# and would hide the host's bpffs (and so tbctl's pins).
tb() { nsenter --net=/var/run/netns/"$NS_R" "$TBCTL" "$@"; }
tbs() { nsenter --net=/var/run/netns/"$NS_S" "$TBCTL" "$@"; }
in_s() { ip netns exec "$NS_S" "$@"; }
in_r() { ip netns exec "$NS_R" "$@"; }
# Any command that must see the pins (bpftool, strace of tbctl).
run_s() { nsenter --net=/var/run/netns/"$NS_S" "$@"; }
run_r() { nsenter --net=/var/run/netns/"$NS_R" "$@"; }

# netns_pair NS_A DEV_A NS_B DEV_B: namespaces NS_A and NS_B, DEV_A in NS_A
# cabled to DEV_B in NS_B, both up, without link-local addresses (so no
# MLD or router solicitation joins the traffic a test counts) and without
# duplicate address detection (addresses are usable at once).
netns_pair() {
	local ns
	ip netns add "$1" && ip netns add "$3" || return 1
	ip link add "$2" netns "$1" type veth peer name "$4" netns "$3" || return 1
	for ns in "$1" "$3"; do
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
		ip -n "$ns" link set lo up
	done
	ip -n "$1" link set "$2" addrgenmode none up
	ip -n "$3" link set "$4" addrgenmode none up
}

netns_mac() { ip -n "$1" -j link show dev "$2" | jq -r '.[0].address'; }

# netns_neigh NS DEV PEER_NS PEER_DEV ADDR...: permanent neighbour entries in
# NS for each ADDR at PEER_DEV's MAC: no ARP or ND races the traffic.
netns_neigh() {
	local ns=$1 dev=$2 mac a
	mac=$(netns_mac "$3" "$4")
	shift 4
	for a in "$@"; do ip -n "$ns" neigh replace "$a" lladdr "$mac" dev "$dev" nud permanent; done
}

# netns_del TBCTL NS DEV...: detach tbctl from each DEV of NS, then delete NS
# (which deletes its veth end, and so the pair). Never fails, so that it
# runs to the end in a trap under set -e.
netns_del() {
	local tbctl=$1 ns=$2 dev ino
	shift 2
	ino=$(stat -L -c %i /var/run/netns/"$ns" 2>/dev/null)
	for dev in "$@"; do
		nsenter --net=/var/run/netns/"$ns" "$tbctl" detach dev "$dev" >/dev/null 2>&1 || true
		rm -f "/run/tbctl/$dev:$ino.lock"
	done
	ip netns del "$ns" 2>/dev/null || true
}

# netns_session: netns_pair for NS_S/DEV_S and NS_R/DEV_R plus a scratch
# directory $tmp, all removed at exit (tbctl detached from both ends
# first). A caller with more to undo defines session_cleanup.
netns_session() {
	tmp=$(mktemp -d)
	trap netns_session_end EXIT
	netns_pair "$NS_S" "$DEV_S" "$NS_R" "$DEV_R"
}

netns_session_end() {
	if declare -F session_cleanup >/dev/null; then session_cleanup || true; fi
	netns_del "$TBCTL" "$NS_R" "$DEV_R"
	netns_del "$TBCTL" "$NS_S" "$DEV_S"
	rm -rf "$tmp"
}
