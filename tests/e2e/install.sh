#!/usr/bin/env bash
# make install into a temporary DESTDIR, as a package build would: the
# installed binary runs, the man page renders with no groff warning, the
# systemd unit passes systemd-analyze verify and names the installed
# binary, and the bash completion offers the right words.
. "$(dirname "$0")/lib.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for prefix in /usr /usr/local; do
	root=$tmp/root$prefix
	check "make install PREFIX=$prefix DESTDIR=..." make -s -C "$ROOT" install PREFIX="$prefix" DESTDIR="$root"
	unitdir=$([[ $prefix == /usr ]] && echo /lib/systemd/system || echo $prefix/lib/systemd/system)
	for f in $prefix/sbin/tbctl $prefix/share/man/man8/tbctl.8 $prefix/share/bash-completion/completions/tbctl \
		"$unitdir/tbctl@.service" "$unitdir/tbctl-exporter.service" $prefix/share/doc/tbctl/example.conf; do
		check "$prefix: installed $f" [ -s "$root$f" ]
	done
	check "$prefix: the unit runs the installed binary" \
		grep -qx "ExecStart=$prefix/sbin/tbctl -batch /etc/tbctl/%i.conf" "$root$unitdir/tbctl@.service"
done
root=$tmp/root/usr
check "the installed binary runs: --version" "$root/usr/sbin/tbctl" --version
check "the installed binary runs: -j help lists every command" \
	bash -c "'$root/usr/sbin/tbctl' -j help | jq -e '.commands | length == 14' >/dev/null"

man=$root/usr/share/man/man8/tbctl.8
warnings=$(LC_ALL=C.UTF-8 groff -man -ww -z "$man" 2>&1)
check "the man page renders with no groff warning${warnings:+ ($warnings)}" [ -z "$warnings" ]
page=$(LC_ALL=C.UTF-8 MANWIDTH=100 man -l "$man" 2>"$tmp/man.err")
check "man -l renders it, with no message" [ ! -s "$tmp/man.err" ]
for section in NAME SYNOPSIS DESCRIPTION OPTIONS COMMANDS UNITS "EXIT STATUS" FILES EXAMPLES; do
	check "the man page has $section" grep -qx "$section" <<<"$page"
done
for cmd in attach detach status "rule set" "rule del" "rule list" show stats reset save apply metrics exporter top; do
	# groff may widen any space of a justified line: "rule  set".
	check "the man page documents $cmd" grep -qE "^       ${cmd// / +}" <<<"$page"
done

# The unit, checked as systemd would load it from the installed tree, with
# this machine's own units (the targets it depends on) beside it.
mkdir -p "$root/etc/tbctl" "$root/usr/lib/systemd/system"
cp -a /lib/systemd/system/. "$root/usr/lib/systemd/system/"
cp "$root/usr/share/doc/tbctl/example.conf" "$root/etc/tbctl/eth0.conf"
for u in tbctl@eth0.service tbctl-exporter.service; do
	verify=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --root="$root" --man=no "$u" 2>&1)
	check "systemd-analyze verify passes $u${verify:+ ($verify)}" [ -z "$verify" ]
done

# The completion, through the function bash would call.
complete_words() { # LINE: what the completion offers for the last word
	bash -c '
		source "$1"
		read -ra COMP_WORDS <<<"$2"
		[[ $2 == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE=$2
		_tbctl tbctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		echo "${COMPREPLY[*]}"' _ "$root/usr/share/bash-completion/completions/tbctl" "$1"
}
check "tbctl <tab>: the commands" bash -c "[[ '$(complete_words 'tbctl ')' == *'attach'*'rule'*'exporter'*'top'* ]]"
check "tbctl ru<tab>: rule" [ "$(complete_words 'tbctl ru')" = rule ]
check "tbctl rule <tab>: set del list" [ "$(complete_words 'tbctl rule ')" = "set del list" ]
check "tbctl rule set dev x <tab>: its keywords" \
	[ "$(complete_words 'tbctl rule set dev x ')" = "dev default rate burst cost action scope early horizon" ]
check "tbctl attach dev x mode <tab>: the modes" [ "$(complete_words 'tbctl attach dev x mode ')" = "xdp xdpgeneric tc-ingress tc-egress" ]
check "tbctl show dev <tab>: device names (lo among them)" bash -c "[[ ' $(complete_words 'tbctl show dev ') ' == *' lo '* ]]"
check "tbctl top dev x sort <tab>: top's columns" [ "$(complete_words 'tbctl top dev x sort ')" = "dropped passed share tokens address rule" ]
summary
