#!/usr/bin/env bash
# make install into a temporary DESTDIR, as a package build would: the
# installed binary runs, the man page renders with no groff warning, the
# systemd unit passes systemd-analyze verify and names the installed
# binary, the bash completion offers the right words, and the man page
# documents every command and option tbctl -j help lists, and no other.
. "$(dirname "$0")/lib.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for prefix in /usr /usr/local; do
	root=$tmp/root$prefix
	check "make install PREFIX=$prefix DESTDIR=..." make -s -C "$ROOT" install PREFIX="$prefix" DESTDIR="$root"
	unitdir=$([[ $prefix == /usr ]] && echo /lib/systemd/system || echo $prefix/lib/systemd/system)
	for f in $prefix/sbin/tbctl $prefix/share/man/man8/tbctl.8 $prefix/share/bash-completion/completions/tbctl \
		"$unitdir/tbctl@.service" "$unitdir/tbctl-exporter.service" "$unitdir/tbctl-fleet@.service" \
		"$unitdir/tbctl-events@.service" \
		$prefix/share/doc/tbctl/example.conf; do
		check "$prefix: installed $f" [ -s "$root$f" ]
	done
	check "$prefix: the unit runs the installed binary" \
		grep -qx "ExecStart=$prefix/sbin/tbctl -batch /etc/tbctl/%i.conf" "$root$unitdir/tbctl@.service"
	check "$prefix: the fleet unit runs the installed binary" \
		grep -qx "ExecStart=$prefix/sbin/tbctl fleet run dev %i \\\$FLEET_ARGS" "$root$unitdir/tbctl-fleet@.service"
	check "$prefix: the events unit runs the installed binary" \
		grep -qx "ExecStart=$prefix/sbin/tbctl events dev %i" "$root$unitdir/tbctl-events@.service"
done
root=$tmp/root/usr
check "the installed binary runs: --version" "$root/usr/sbin/tbctl" --version
check "the installed binary runs: -j help lists every command" \
	bash -c "'$root/usr/sbin/tbctl' -j help | jq -e '.commands | length == 22' >/dev/null"

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

# Every command of tbctl -j help, with every keyword and value of its
# arguments, in the synopsis lines of the page's COMMANDS (a .B after a
# .TP), and the reverse. Placeholders (DEV, N) are upper case.
synopses() { # "COMMAND<TAB>WORDS" a line, groff's escapes gone
	awk '/^\.SH COMMANDS/ { on = 1; next } /^\.SH/ { on = 0 }
	     on && tp && /^\.B / { sub(/^\.B /, ""); print } { tp = /^\.TP/ }' "$man" |
		sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' |
		awk '{ c = ""; for (i = 1; i <= NF && $i ~ /^[a-z]+$/ && $i != "dev"; i++) c = c (c ? " " : "") $i
		       w = ""; for (; i <= NF; i++) w = w " " $i; print c "\t" w }'
}
words() { tr -s '[]{}|. \t' '\n' | grep -E '^-?[a-z][a-z0-9-]*$' | sort -u | xargs; }
help=$("$root/usr/sbin/tbctl" -j help)
while read -r c; do
	hw=$(jq -r --arg c "$c" '.commands[] | select(.command == $c) | .arguments' <<<"$help" | words)
	mw=$(synopses | awk -F '\t' -v c="$c" '$1 == c { print $2 }' | words)
	check "the man page's $c takes what tbctl -j help says (help: $hw; page: $mw)" [ "$hw" = "$mw" ]
done < <(jq -r '.commands[].command' <<<"$help")
while read -r c; do
	check "the man page's $c is a command of tbctl -j help" \
		jq -e --arg c "$c" 'any(.commands[]; .command == $c)' <<<"$help" >/dev/null
done < <(synopses | cut -f1 | sort -u)

# The unit, checked as systemd would load it from the installed tree, with
# this machine's own units (the targets it depends on) beside it.
mkdir -p "$root/etc/tbctl" "$root/usr/lib/systemd/system"
cp -a /lib/systemd/system/. "$root/usr/lib/systemd/system/"
cp "$root/usr/share/doc/tbctl/example.conf" "$root/etc/tbctl/eth0.conf"
echo "FLEET_ARGS=store redis://192.0.2.7:6379 host edge-1" >"$root/etc/tbctl/eth0.fleet"
for u in tbctl@eth0.service tbctl-exporter.service tbctl-fleet@eth0.service tbctl-events@eth0.service; do
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
	[ "$(complete_words 'tbctl rule set dev x ')" = "dev default proto dport sport flags type rate burst cost action scope early horizon total total-burst fleet share share-burst peak peak-burst ban ban-after" ]
check "tbctl events set dev x <tab>: its keywords" [ "$(complete_words 'tbctl events set dev x ')" = "dev rate interval" ]
check "tbctl events dev x <tab>: its keywords and kinds" \
	[ "$(complete_words 'tbctl events dev x ')" = "set dev drop mark remark fleet ban count seconds" ]
check "tbctl rule set dev x fleet <tab>: on off" [ "$(complete_words 'tbctl rule set dev x fleet ')" = "on off" ]
check "tbctl fleet <tab>: run show" [ "$(complete_words 'tbctl fleet ')" = "run show" ]
check "tbctl ban <tab>: add del list apply" [ "$(complete_words 'tbctl ban ')" = "add del list apply" ]
check "tbctl ban add dev x <tab>: its keywords" [ "$(complete_words 'tbctl ban add dev x ')" = "dev for" ]
check "tbctl fleet run dev x <tab>: its keywords" \
	[ "$(complete_words 'tbctl fleet run dev x ')" = "dev store fleet host interval lease fallback" ]
check "tbctl fleet run dev x fleet <tab>: a name, nothing offered" [ -z "$(complete_words 'tbctl fleet run dev x fleet ')" ]
check "tbctl attach dev x mode <tab>: the modes" [ "$(complete_words 'tbctl attach dev x mode ')" = "xdp xdpgeneric tc-ingress tc-egress" ]
check "tbctl show dev <tab>: device names (lo among them)" bash -c "[[ ' $(complete_words 'tbctl show dev ') ' == *' lo '* ]]"
check "tbctl top dev x sort <tab>: top's columns" [ "$(complete_words 'tbctl top dev x sort ')" = "dropped passed share tokens address rule" ]
summary
