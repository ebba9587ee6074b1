#!/usr/bin/env bash
# Installs the Debian packages tbctl's build, tests, demo and benchmark need,
# when missing, and mounts bpffs. Safe to run again: it only acts on what lacks.
set -euo pipefail

# clang/llvm: compile BPF; bpftool: skeletons; libbpf/libelf/zlib: loader;
# libjson-c: -j output; libmnl: rtnetlink for the fq qdisc; iproute2: netns/veth/tc in tests; jq: JSON checks in
# tests; ethtool: NAPI on the benchmark's veth; nftables/iptables: comparators
# in the benchmark; gnuplot: its charts; iperf3: TCP through every limiter;
# qemu, linux-image-amd64 (Debian's stock kernel, with fq, netem and
# police as modules), busybox-static, kmod, cpio: tests/vm/run; strace: kills
# tbctl at each of its bpf() calls in the crash tests; time: peak memory in
# the benchmark; libmicrohttpd: the exporter's HTTP server; prometheus:
# promtool and a real server scraping the exporter in the tests; curl:
# scrapes in the tests; ncurses: top's screen; groff, man-db, systemd:
# checking the installed man page and unit (systemd-analyze verify);
# debhelper, dpkg-dev, lintian, git: the Debian package (make deb) and its
# check; libhiredis: the fleet agent's Redis client; redis-server (and its
# redis-cli): the store the fleet tests start on loopback; libxdp: the
# dispatcher through which tbctl's XDP program shares a device with other
# tools' (and the dispatcher object it ships); xdp-tools: xdp-filter and
# xdp-loader, the other tools of the tests. For arm64:
# crossbuild-essential-arm64, pkgconf and the -dev libraries for arm64:
# make arm64 and make deb-arm64 (file checks what they made);
# qemu-system-arm and mmdebstrap: tests/vm/run --arch arm64, which boots
# Debian's arm64 kernel on its arm64 packages.
packages=(make gcc clang llvm libbpf-dev libelf-dev zlib1g-dev bpftool libjson-c-dev libmnl-dev
	  iproute2 ethtool jq nftables iptables gnuplot-nox util-linux procps
	  iperf3 qemu-system-x86 linux-image-amd64 busybox-static kmod cpio strace time
	  libmicrohttpd-dev prometheus curl libncurses-dev groff-base man-db systemd
	  debhelper dpkg-dev lintian git libhiredis-dev redis-server libxdp-dev xdp-tools
	  crossbuild-essential-arm64 pkgconf:arm64 libbpf-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64
	  libjson-c-dev:arm64 libmnl-dev:arm64 libmicrohttpd-dev:arm64 libncurses-dev:arm64
	  libhiredis-dev:arm64 libxdp-dev:arm64 file qemu-system-arm mmdebstrap)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	if [[ $(id -u) -ne 0 ]]; then
		echo "deps: missing ${missing[*]}; run as root to install them" >&2
		exit 1
	fi
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
	apt-get update -q >/dev/null
	# Packaged services (prometheus, redis-server) are not started: the tests run
	# their own, on loopback, and stop it.
	policy=/usr/sbin/policy-rc.d
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod +x "$policy"
		trap 'rm -f "$policy"' EXIT
	fi
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ $(stat -f -c %T /sys/fs/bpf 2>/dev/null) != bpf_fs ]]; then
	mount -t bpf bpf /sys/fs/bpf
fi
