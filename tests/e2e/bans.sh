#!/usr/bin/env bash
# Bans on real traffic, xdp (and tc-ingress under TB_FULL=1: the program
# tests run both hooks on crafted frames). A rule's ban: a source over
# its rate is banned at its first refusal (or its Nth within a second),
# everything after is dropped without its bucket, and counted as banned,
# exactly; once the ban ends the source is let back in. Bans by hand: an
# address or a prefix dropped whatever its rule, until the ban ends or is
# lifted; a list applied under traffic swaps at one instant. Then save
# and apply, the counters, and bad words and lines, which change nothing.
. "$(dirname "$0")/lib.bash"
setup
PORT=9311
RATE=100                   # packets a second
BURST=20
BAN=2                      # seconds
COUNT=200                  # datagrams from each source, at 400 a second

recv_start() {
	in_r "$TBGEN" recv --port $PORT --seconds $RECV_LIMIT --idle 0.3 >"$tmp/recv" &
	recv=$!
	bound "$NS_R" -u $PORT
}
# send SRCS COUNT PPS: COUNT datagrams from each source at PPS, received.
send() {
	recv_start
	in_s "$TBGEN" send --src "$1" --dst "$DST4,$DST6" --port $PORT --size 200 --pps "$3" \
		--count "$2" --seconds 10 >"$tmp/send"
	wait "$recv"
}
got() { awk -v s="$1" '$1 == s { n = $2 } END { print n + 0 }' "$tmp/recv"; }
stat_of() { tb -j stats dev "$DEV_R" | jq -r ".$1"; }
# listed ADDR KIND: ban list names ADDR as banned by KIND (manual, rule).
listed() { tb -j ban list dev "$DEV_R" | jq -e --arg a "$1" --arg k "$2" 'any(.[]; .ban == $a and .kind == $k)' >/dev/null; }
unlisted() { ! listed "$@"; }

modes=(xdp)
[[ ${TB_FULL:-0} == 1 ]] && modes+=(tc-ingress)
for mode in "${modes[@]}"; do
	tb attach dev "$DEV_R" mode "$mode" >/dev/null
	check "$mode: rule set ... ban ${BAN}s" tb rule set dev "$DEV_R" default rate ${RATE}pps burst $BURST \
		cost packets ban ${BAN}s
	S4=${SRC4[0]} S6=${SRC6[0]}
	send "$S4,$S6" $COUNT 400
	sent_at=$(now_ms)
	bound=$(awk -v b=$BURST -v r=$RATE '$1 == "elapsed" { printf "%d", b + r * ($2 + 0.005) + 1 }' "$tmp/send")
	banned=$(stat_of banned_packets)
	accounted=$banned
	for src in "$S4" "$S6"; do
		passed=$(show_field "$src" passed_packets)
		dropped=$(show_field "$src" dropped_packets)
		accounted=$((accounted + passed + dropped))
		check "$mode: $src: $(got "$src") of $COUNT arrived, within b + r*T = $bound, all its bucket passed ($passed)" \
			[ "$(got "$src")" -ge $BURST -a "$(got "$src")" -le "$bound" -a "$passed" = "$(got "$src")" ]
		check "$mode: $src: its bucket refused $dropped before the ban, the rest never reached it" \
			[ "$dropped" -ge 1 -a $((passed + dropped)) -lt $((COUNT / 2)) ]
		check "$mode: ban list names $src, banned by its rule" listed "$src" rule
	done
	check "$mode: every datagram is counted once: $accounted = $((2 * COUNT)) (banned $banned)" [ "$accounted" = $((2 * COUNT)) ]
	check "$mode: stats counts the bans made" [ "$(stat_of bans_made)" -ge 2 ]
	check "$mode: show says what the bans dropped" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL show dev $DEV_R |
		grep -q '^# banned: $banned packets, '"
	check "$mode: ban list -j gives the time left, at most ${BAN}s" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j ban list dev $DEV_R | jq -e 'all(.[]; .left_ms <= $((BAN * 1000)) and .left_ms > 0)' >/dev/null"
	# The ban ends BAN seconds after the first refusal, within the send.
	sleep "$(awk -v t="$(($(now_ms) - sent_at))" -v b=$BAN 'BEGIN { s = b - t / 1000 + 0.1; print (s > 0 ? s : 0) }')"
	check "$mode: after ${BAN}s the bans have ended" unlisted "$S4" rule
	send "$S4,$S6" 10 20
	check "$mode: and both sources are let back in: $(got "$S4") and $(got "$S6") of 10" \
		[ "$(got "$S4")" = 10 -a "$(got "$S6")" = 10 ]

	check "$mode: rule set ... ban ${BAN}s ban-after 60" tb rule set dev "$DEV_R" default rate ${RATE}pps \
		burst $BURST cost packets ban ${BAN}s ban-after 60
	S4=${SRC4[1]} S6=${SRC6[1]}
	send "$S4,$S6" $COUNT 400
	for src in "$S4" "$S6"; do
		dropped=$(show_field "$src" dropped_packets)
		check "$mode: $src: its bucket refused $dropped (at least 60) before it was banned" \
			[ "$dropped" -ge 60 -a "$dropped" -lt $((COUNT - BURST)) ]
		check "$mode: ban list names $src" listed "$src" rule
	done

	check "$mode: rule set without a ban" tb rule set dev "$DEV_R" default rate 1000pps burst 100 cost packets
	S4=${SRC4[2]} S6=${SRC6[2]}
	check "$mode: ban add $S4 for ${BAN}s" tb ban add dev "$DEV_R" "$S4" for ${BAN}s
	added_at=$(now_ms)
	check "$mode: ban add 2001:db8::/32" tb ban add dev "$DEV_R" 2001:db8::/32
	send "$S4,$S6,${SRC4[3]}" 20 40
	check "$mode: the banned address and prefix got nothing through, the other all ($(got "$S4"), $(got "$S6"), $(got "${SRC4[3]}"))" \
		[ "$(got "$S4")" = 0 -a "$(got "$S6")" = 0 -a "$(got "${SRC4[3]}")" = 20 ]
	check "$mode: and its bucket saw nothing" bash -c "! nsenter --net=/var/run/netns/$NS_R $TBCTL show dev $DEV_R addr $S4 2>&1 |
		grep -v 'no bucket'"
	check "$mode: ban list names the address, by hand" listed "$S4" manual
	check "$mode: and the prefix" listed 2001:db8::/32 manual
	check "$mode: ban del lifts the prefix" tb ban del dev "$DEV_R" 2001:db8::/32
	sleep "$(awk -v t="$(($(now_ms) - added_at))" -v b=$BAN 'BEGIN { s = b - t / 1000 + 0.1; print (s > 0 ? s : 0) }')"
	check "$mode: the address's ban ended after ${BAN}s" unlisted "$S4" manual
	send "$S4,$S6" 20 40
	check "$mode: both let back in ($(got "$S4"), $(got "$S6") of 20)" [ "$(got "$S4")" = 20 -a "$(got "$S6")" = 20 ]

	# A list swapped under traffic: A, B, A, B... while the list goes
	# from {A} to {B} at once, one of the two arrives of every pair.
	A=${SRC4[4]} B=${SRC4[5]}
	echo "$A  # the first list" >"$tmp/list_a"
	printf '# the second list\n%s 1h\n' "$B" >"$tmp/list_b"
	check "$mode: ban apply the first list" tb ban apply dev "$DEV_R" "$tmp/list_a"
	recv_start
	in_s "$TBGEN" send --src "$A,$B" --dst "$DST4" --port $PORT --size 200 --pps 100 --count 100 --seconds 10 >"$tmp/send" &
	sender=$!
	sleep 0.5
	check "$mode: ban apply the second list under traffic" tb ban apply dev "$DEV_R" "$tmp/list_b"
	wait "$sender"
	wait "$recv"
	check "$mode: each got some through ($(got "$A"), $(got "$B")), and the two 100 +- 1: one banned at every instant" \
		[ "$(got "$A")" -gt 0 -a "$(got "$B")" -gt 0 -a $(($(got "$A") + $(got "$B"))) -ge 99 -a $(($(got "$A") + $(got "$B"))) -le 101 ]
	check "$mode: the list is the second file's" listed "$B" manual
	check "$mode: and nothing of the first" unlisted "$A" manual
	tb detach dev "$DEV_R"
done

tb attach dev "$DEV_R" >/dev/null
check "a rule bans a shared bucket" tb rule set dev "$DEV_R" 198.18.0.0/16 rate 1mbit scope shared ban 10m
check "and a per-/48 group's, after 5 refusals" tb rule set dev "$DEV_R" 2001:db8::/32 rate 1mbit scope per-/48 ban 1h ban-after 5
check "rule list gives the bans as rule set takes them" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R |
	grep -q '^198.18.0.0/16 .* ban 10m ban-after 1$'"
check "rule list -j gives them in ms" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j rule list dev $DEV_R |
	jq -e '[.[] | [.ban_ms, .ban_after]] | sort == [[600000, 1], [3600000, 5]]' >/dev/null"
check "ban add with no end" tb ban add dev "$DEV_R" 198.18.99.0/24
check "ban add for 90 minutes" tb ban add dev "$DEV_R" 2001:db8:99::/48 for 90m
check "ban add again sets the new end" tb ban add dev "$DEV_R" 2001:db8:99::/48 for 1h
tb save dev "$DEV_R" >"$tmp/saved"
check "save writes the manual bans, each with what is left" bash -c "grep -qx 'ban add dev $DEV_R 198.18.99.0/24' $tmp/saved &&
	grep -Eq '^ban add dev $DEV_R 2001:db8:99::/48 for (359[0-9]\.[0-9]{3}s|1h)$' $tmp/saved"
tb detach dev "$DEV_R"
check "-batch of the saved file gives the bans back" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -batch $tmp/saved >/dev/null &&
	nsenter --net=/var/run/netns/$NS_R $TBCTL ban list dev $DEV_R | grep -q '^198.18.99.0/24 .* manual .* forever'"
check "attach replace (a new table size) keeps the bans made by hand" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL attach dev $DEV_R replace max-addrs 4096 &&
	nsenter --net=/var/run/netns/$NS_R $TBCTL save dev $DEV_R | grep -q '^ban add dev $DEV_R 2001:db8:99::/48 for 3[0-9]\{3\}\.[0-9]\{3\}s$' &&
	nsenter --net=/var/run/netns/$NS_R $TBCTL ban list dev $DEV_R | grep -q '^198.18.99.0/24 .* manual .* forever'"
check "the metrics count banned packets" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL metrics dev $DEV_R | grep -q '^tbctl_banned_packets_total'"

# Bad words and lines: refused, naming the problem, with nothing changed.
rule_refused "ban applies to action drop only" default rate 1mbit action mark ban 1m
rule_refused 'ban-after needs "ban DURATION"' default rate 1mbit ban-after 3
rule_refused 'ban "0" is zero' default rate 1mbit ban 0
rule_refused "is too large (at most 30d" default rate 1mbit ban 31d
rule_refused "whole number of milliseconds" default rate 1mbit ban 1.5ms
rule_refused "ban-after" default rate 1mbit ban 1m ban-after 0
tb ban list dev "$DEV_R" >"$tmp/bans_before"
ban_refused() { # WANT ARG...
	local want=$1 err code
	shift
	err=$(tb ban "$@" 2>&1)
	code=$?
	check "ban $*: exit $code, \"$err\"" bash -c "[ $code != 0 ] && grep -q -- \"\$1\" <<<\"\$2\"" _ "$want" "$err"
	check "ban $*: the bans are unchanged" diff <(cut -c1-70 "$tmp/bans_before") <(tb ban list dev "$DEV_R" | cut -c1-70)
}
ban_refused 'duration "0" is zero' add dev "$DEV_R" 198.18.5.0/24 for 0
ban_refused "too large" add dev "$DEV_R" 198.18.5.0/24 for 400d
ban_refused 'not "default"' add dev "$DEV_R" default
ban_refused 'invalid address' add dev "$DEV_R" 198.18.500.1
ban_refused "no ban of 198.18.5.0/24" del dev "$DEV_R" 198.18.5.0/24
printf '198.18.6.0/24\n# fine so far\n198.18.7.0/33 1h\n' >"$tmp/bad_list"
ban_refused "line 3: invalid prefix length" apply dev "$DEV_R" "$tmp/bad_list"
printf '198.18.6.0/24 1h extra\n' >"$tmp/bad_list"
ban_refused 'line 1: "extra" after the duration' apply dev "$DEV_R" "$tmp/bad_list"
printf '198.18.6.0/24 timeout 1h\n' >"$tmp/bad_list"
ban_refused "line 1: timeout \"1h\": seconds" apply dev "$DEV_R" "$tmp/bad_list"
tb detach dev "$DEV_R"
summary
