# Sourced by the fleet test and the fleet benchmark: a sender namespace
# FLEET_S holding the client addresses on its loopback, cabled to hosts
# FLEET_H[0..N) (namespace and device alike: "s" + name on the sender's
# side), host i at 198.18.i.2/24; redis-servers as daemons on loopback
# ports; the agents. Callers set TBCTL and tmp, and remove it all with
# fleet_down (a trap). Only their own namespaces, links and processes are
# touched.
FLEET_H=() FLEET_AGENTS=() FLEET_REDIS=()

# fleet_free_port: a loopback TCP port no socket uses, nor the port 10000
# above it (a cluster node's bus). Both below the kernel's ephemeral range,
# where an outgoing connection could take one between the check and the
# server's bind.
fleet_free_port() {
	local p low
	low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range)
	for _ in $(seq 1 50); do
		p=$((10000 + RANDOM % (low - 20000)))
		ss -Hatn "( sport = :$p or sport = :$((p + 10000)) )" | grep -q . || { echo "$p"; return; }
	done
	return 1
}

# fleet_hosts ID N CLIENT...: the sender and N hosts.
fleet_hosts() {
	local id=$1 n=$2 h i a
	shift 2
	FLEET_S=tbf$id
	ip netns add "$FLEET_S" && ip -n "$FLEET_S" link set lo up || return 1
	for a in "$@"; do ip -n "$FLEET_S" addr add "$a/32" dev lo || return 1; done
	for i in $(seq 1 "$n"); do
		h=tbf$id$i
		FLEET_H+=("$h")
		ip netns add "$h" && ip link add "s$h" netns "$FLEET_S" type veth peer name "$h" netns "$h" || return 1
		ip -n "$FLEET_S" link set "s$h" up
		ip -n "$h" link set lo up
		ip -n "$h" link set "$h" addrgenmode none up
		ip -n "$FLEET_S" addr add "198.18.$i.1/24" dev "s$h"
		ip -n "$h" addr add "198.18.$i.2/24" dev "$h"
		netns_neigh "$FLEET_S" "s$h" "$h" "$h" "198.18.$i.2"
	done
}

# fleet_tb HOST ARG...: tbctl in host HOST's namespace.
fleet_tb() { nsenter --net=/var/run/netns/"$1" "$TBCTL" "${@:2}"; }

# fleet_redis PORT [ARG...]: a redis-server daemon on 127.0.0.1:PORT, its
# files in $tmp/redis-PORT.*, ready; its PID kept for fleet_down (call it
# from this shell, not a subshell). The daemon gets no descriptor beyond
# the standard ones, which it sends to /dev/null: one on a pipe (the
# tests' fd 3) would hold the reader at the other end.
fleet_redis() {
	local port=$1 pid=$tmp/redis-$1.pid
	shift
	rm -f "$pid"
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --loglevel warning --daemonize yes \
		--pidfile "$pid" --logfile "$tmp/redis-$port.log" --dir "$tmp" "$@" 3>&- || return 1
	for _ in $(seq 1 500); do
		if [[ -s $pid && $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]]; then
			FLEET_REDIS+=("$(cat "$pid")")
			return 0
		fi
		sleep 0.02
	done
	echo "redis-server on port $port did not answer; its log:" >&2
	tail -n 5 "$tmp/redis-$port.log" >&2
	return 1
}

# fleet_cluster N: N redis-servers on free ports (fleet_redis, so call it
# from this shell), made one cluster of masters, and ok; their ports in
# FLEET_CLUSTER.
fleet_cluster() {
	local p args=()
	FLEET_CLUSTER=()
	for _ in $(seq 1 "$1"); do
		p=$(fleet_free_port)
		fleet_redis "$p" --cluster-enabled yes --cluster-config-file "nodes-$p.conf" || return 1
		FLEET_CLUSTER+=("$p")
		args+=("127.0.0.1:$p")
	done
	redis-cli --cluster create "${args[@]}" --cluster-replicas 0 --cluster-yes >/dev/null 2>&1 || return 1
	for _ in $(seq 1 500); do
		redis-cli -p "${FLEET_CLUSTER[0]}" cluster info 2>/dev/null | grep -q cluster_state:ok && return 0
		sleep 0.02
	done
	return 1
}

# fleet_agents URL [ARG...]: an agent for every host (host name hN),
# their PIDs in FLEET_AGENTS, stderr in $tmp/agentN.err.
fleet_agents() {
	local url=$1 i
	shift
	for i in $(seq 1 ${#FLEET_H[@]}); do
		"$TBCTL" -n "${FLEET_H[i - 1]}" fleet run dev "${FLEET_H[i - 1]}" store "$url" host "h$i" "$@" 2>"$tmp/agent$i.err" &
		FLEET_AGENTS+=($!)
	done
}

fleet_agents_stop() {
	local p
	for p in "${FLEET_AGENTS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${FLEET_AGENTS[@]}"; do wait "$p" 2>/dev/null || true; done
	FLEET_AGENTS=()
}

# Only the shell that made it all: a background job killed before it has
# executed its command is a copy of this shell, with its EXIT trap.
fleet_down() {
	local h p
	[[ $BASHPID == "$$" ]] || return 1
	fleet_agents_stop
	for p in "${FLEET_REDIS[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	# Gone before the caller removes their files, which they write as
	# they shut down.
	for p in "${FLEET_REDIS[@]}"; do
		for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.02; done
	done
	for h in "${FLEET_H[@]}"; do netns_del "$TBCTL" "$h" "$h"; done
	[[ -n ${FLEET_S:-} ]] && ip netns del "$FLEET_S" 2>/dev/null
	return 0
}
