#!/usr/bin/env bash
# The Debian package on Debian's own kernel: dpkg installs it (its
# dependencies are this machine's), no unit is enabled, the installed
# tbctl polices a UDP source to its cap on a veth, and a purge removes
# every file the package installed and what tbctl made at run time.
. "$(dirname "$0")/../../e2e/lib.bash"

version=$(awk -F '[()]' 'NR == 1 { print $2 }' "$ROOT/debian/changelog")
deb=$B/deb/tbctl_${version}_amd64.deb
if [[ ! -s $deb ]]; then
	fail "the package is built ($deb: run make deb)"
	summary
	exit
fi
setup
SECS=3
RATE=250000     # 2mbit
BURST=16384
SIZE=500
FRAME=$((SIZE + 42))

check "dpkg -i installs the package" bash -c "dpkg -i '$deb' >'$tmp/dpkg' 2>&1"
files=$(dpkg -L tbctl)
TBCTL=/usr/sbin/tbctl
check "tbctl is the package's, at $TBCTL" bash -c "dpkg -S $TBCTL | grep -q '^tbctl: '"
check "its version is the package's" bash -c "$TBCTL --version | grep -q '^tbctl $version '"
check "no unit is enabled" [ -z "$(find /etc/systemd/system -name 'tbctl*' 2>/dev/null)" ]

check "the installed tbctl attaches" tb attach dev "$DEV_R" mode xdp
check "and sets a rule" tb rule set dev "$DEV_R" default rate 2mbit burst $BURST early off
in_r "$TBGEN" recv --seconds $RECV_LIMIT --idle 1 >"$tmp/recv" &
rpid=$!
listening "$NS_R" udp 9000
in_s "$TBGEN" send --src 198.18.0.10 --dst "$DST4" --size $SIZE --pps 1000 --seconds $SECS >"$tmp/sent"
wait $rpid
capped 198.18.0.10 "$tmp/recv" "$tmp/sent" $RATE $BURST $FRAME 400
check "detach" tb detach dev "$DEV_R"

check "dpkg --purge removes it" bash -c "dpkg --purge tbctl >>'$tmp/dpkg' 2>&1"
left=$(for f in $files; do [[ -f $f ]] && echo "$f"; done)
check "no file it installed is left${left:+: $left}" [ -z "$left" ]
check "nor what tbctl made: no pin directory, no lock directory" [ ! -e /sys/fs/bpf/tbctl -a ! -e /run/tbctl ]
summary
