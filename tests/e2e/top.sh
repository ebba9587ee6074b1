#!/usr/bin/env bash
# tbctl top: one source over its cap and one under it; the live view's
# rates, tokens and shares agree with what is sent, as JSON per refresh
# and as plain blocks on a non-terminal; on a terminal (script(1)) it
# draws with ncurses and quits on q; bad input is refused.
. "$(dirname "$0")/lib.bash"
setup

check "attach" tb attach dev "$DEV_R" mode xdp
check "default rule 8mbit" tb rule set dev "$DEV_R" default rate 8mbit burst 16k early off
check "a rule of 40mbit for the second source" tb rule set dev "$DEV_R" 198.18.0.11/32 rate 40mbit

for bad in "top" "top dev $DEV_R interval 0" "top dev $DEV_R sort colour" "top dev $DEV_R -n 0" "top dev $DEV_R rows"; do
	# shellcheck disable=SC2086
	tb $bad >/dev/null 2>"$tmp/err"
	rc=$?
	check "tbctl $bad: exit 2 with an error ($(head -1 "$tmp/err"))" bash -c "[ $rc = 2 ] && grep -q '^Error: ' $tmp/err"
done
check "top of a device that is not attached: exit 1" bash -c "! nsenter --net=/var/run/netns/$NS_R $TBCTL top dev lo -n 1 2>$tmp/err && grep -q 'not attached' $tmp/err"

in_r "$TBGEN" recv --port 9001 --seconds 8 --idle 0.5 >/dev/null &
recv=$!
listening "$NS_R" udp 9001
# 198.18.0.10: 2,000 frames of 1,042 bytes a second, twice its cap;
# 198.18.0.11: 500 a second, an eighth of its cap... of 5,000,000 B/s: 0.1.
in_s "$TBGEN" send --src 198.18.0.10 --dst 198.18.0.2 --port 9001 --size 1000 --pps 2000 --seconds 7 >/dev/null &
s1=$!
in_s "$TBGEN" send --src 198.18.0.11 --dst 198.18.0.2 --port 9001 --size 1000 --pps 480 --seconds 7 >/dev/null &
s2=$!
# Both flowing, the first past its burst, before the first refresh.
policing 198.18.0.10
eventually bash -c "(( \$(nsenter --net=/var/run/netns/$NS_R $TBCTL -j show dev $DEV_R addr 198.18.0.11 | jq '.[0].passed_packets // 0') > 0 ))"
tb -j top dev "$DEV_R" -n 3 interval 1 >"$tmp/top.json"
tb top dev "$DEV_R" -n 2 interval 0.5 rows 5 >"$tmp/top.txt"
# q once the screen shows the header (at most 8 s): a fixed delay lost
# the race on a loaded machine, and top quit before it had drawn.
drawn() { grep -q "tbctl top dev $DEV_R" "$tmp/top.tty" 2>/dev/null; }
(for _ in $(seq 80); do drawn && break; sleep 0.1; done; sleep 0.5; printf q) |
	timeout 10 script -qfec "nsenter --net=/var/run/netns/$NS_R $TBCTL top dev $DEV_R interval 0.5" /dev/null \
		>"$tmp/top.tty" 2>&1
tty_rc=$?
wait "$s1" "$s2" "$recv"

check "-j: one JSON document per refresh (3)" [ "$(jq -s length "$tmp/top.json")" = 3 ]
last=$(jq -s '.[-1]' "$tmp/top.json")
first=$(jq -r '.addresses[0].address' <<<"$last")
check "sorted by dropped: the source over its cap first ($first)" [ "$first" = 198.18.0.10 ]
row() { jq -r --arg a "$1" ".addresses[] | select(.address == \$a) | .$2" <<<"$last"; }
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }
check "198.18.0.10 passes its cap: $(row 198.18.0.10 passed_bits_per_sec) bit/s of 8,000,000" \
	within "$(row 198.18.0.10 passed_bits_per_sec)" 7000000 9000000
check "198.18.0.10 drops the rest: $(row 198.18.0.10 dropped_bits_per_sec) bit/s of about 8,670,000" \
	within "$(row 198.18.0.10 dropped_bits_per_sec)" 7000000 10500000
check "198.18.0.10 uses its whole cap: share $(row 198.18.0.10 share)" within "$(row 198.18.0.10 share)" 0.85 1.15
check "198.18.0.10 has next to no tokens: $(row 198.18.0.10 tokens_bytes) of 16384" \
	within "$(row 198.18.0.10 tokens_bytes)" 0 8000
check "198.18.0.11 drops nothing and uses a tenth of its cap: share $(row 198.18.0.11 share)" \
	bash -c "[ '$(row 198.18.0.11 dropped_packets_per_sec)' = 0 ] && awk -v v='$(row 198.18.0.11 share)' 'BEGIN { exit !(v > 0.07 && v < 0.13) }'"
check "its rule is its own /32 ($(row 198.18.0.11 rule))" [ "$(row 198.18.0.11 rule)" = 198.18.0.11/32 ]
check "the device totals: $(jq '.totals.dropped_bits_per_sec' <<<"$last") bit/s dropped" \
	within "$(jq '.totals.dropped_bits_per_sec' <<<"$last")" 7000000 10500000
check "plain text on a non-terminal: 2 blocks, each a header and the table" \
	bash -c "[ \$(grep -Ec '^tbctl top dev $DEV_R: [0-9]+ addresses; passed .* dropped ' $tmp/top.txt) = 2 ] &&
		 [ \$(grep -c '^ADDRESS ' $tmp/top.txt) = 2 ] && grep -q '^198.18.0.10  *default  ' $tmp/top.txt"
check "on a terminal: drawn, and q quits (exit $tty_rc)" \
	bash -c "[ $tty_rc = 0 ] && grep -q 'tbctl top dev $DEV_R' $tmp/top.tty"
# A reset of the counters between two refreshes: the rates count from
# zero again, as the device's counters do, and never wrap around.
tb -j top dev "$DEV_R" -n 3 interval 1 >"$tmp/reset.json" &
topper=$!
# Between the first refresh and the second.
eventually test -s "$tmp/reset.json"
check "reset counters while top runs" tb reset dev "$DEV_R" counters
wait "$topper"
check "top across the reset: 3 refreshes, every total at most 100 Mbit/s ($(jq -c '.totals' "$tmp/reset.json" | tr '\n' ' '))" \
	bash -c "[ \$(jq -s length $tmp/reset.json) = 3 ] &&
		 jq -se 'all(.[].totals; .passed_bits_per_sec <= 1e8 and .dropped_bits_per_sec <= 1e8)' $tmp/reset.json >/dev/null"
err=$(printf 'top dev %s -n 1\n' "$DEV_R" | tb -batch - 2>&1)
check "top is refused in a batch ($err)" grep -q "line 1: top is no command to run from a batch" <<<"$err"
summary
