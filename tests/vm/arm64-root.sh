#!/usr/bin/env bash
# Makes the arm64 guest's root for tests/vm/run --arch arm64: Debian 12's
# own arm64 kernel (linux-image-arm64) and the arm64 packages that tbctl,
# its tests and their shell need, extracted (not installed: nothing of
# arm64 runs here) from the archive this machine's apt uses, with the
# kernel's module index made here.
#
#   tests/vm/arm64-root.sh DIR
#
# DIR is made anew, through DIR.tmp, so an interrupted run leaves none.
set -euo pipefail
dir=${1:?usage: tests/vm/arm64-root.sh DIR}

# The shell and tools the suites use; tbctl's libraries; the kernel.
packages=(busybox-static bash dash coreutils diffutils util-linux mount iproute2 procps grep sed gawk findutils kmod
	  libc-bin base-files base-passwd netbase jq bpftool ethtool
	  libbpf1 libxdp1 libelf1 zlib1g libjson-c5 libmnl0 libhiredis0.14 libmicrohttpd12 libncursesw6
	  linux-image-arm64)

# This machine's apt sources, whichever form they are in.
sources=()
[[ -s /etc/apt/sources.list ]] && sources+=(/etc/apt/sources.list)
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[[ -s $f ]] && sources+=("$f")
done
((${#sources[@]})) || { echo "arm64-root: no apt sources in /etc/apt" >&2; exit 1; }
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")

rm -rf "$dir.tmp"
mkdir -p "$(dirname "$dir")"
if ! mmdebstrap --quiet --variant=extract --architectures=arm64 --include="$(IFS=,; echo "${packages[*]}")" \
	"$suite" "$dir.tmp" "${sources[@]}"; then
	echo "arm64-root: mmdebstrap could not extract Debian's arm64 packages (apt sources: ${sources[*]})" >&2
	rm -rf "$dir.tmp"
	exit 1
fi
kver=$(ls "$dir.tmp/lib/modules")
depmod -b "$dir.tmp" "$kver"
# What the packages' scripts would have made: the users, awk, and /var/run
# as /run (where ip keeps its namespaces).
cp "$dir.tmp/usr/share/base-passwd/passwd.master" "$dir.tmp/etc/passwd"
cp "$dir.tmp/usr/share/base-passwd/group.master" "$dir.tmp/etc/group"
ln -sfn gawk "$dir.tmp/usr/bin/awk"
rm -rf "$dir.tmp/var/run" "$dir.tmp/var/lock"
ln -sfn /run "$dir.tmp/var/run"
ln -sfn /run/lock "$dir.tmp/var/lock"
# Made now (the extracted root keeps a package's time), for tests/vm/run
# to tell it from one older than this script.
touch "$dir.tmp"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
