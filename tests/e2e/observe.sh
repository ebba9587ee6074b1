#!/usr/bin/env bash
# What an operator reads: show (addr, top, sort), stats, status, rule list
# as text and JSON, the events of a flood within their sampling's bounds
# and what the sampling held back, and reset of counters and of buckets.
. "$(dirname "$0")/lib.bash"
setup

check "attach" tb attach dev "$DEV_R" mode xdp max-addrs 4096
check "default rule" tb rule set dev "$DEV_R" default rate 1mbit burst 10k
check "faster /32" tb rule set dev "$DEV_R" 198.18.0.11/32 rate 4mbit burst 10k
check "fastest /32, packet mode" tb rule set dev "$DEV_R" 198.18.0.12 rate 2kpps burst 32 cost packets
tb -j events dev "$DEV_R" seconds 3 >"$tmp/events" &
reader=$!
t0=$(now_ms)
in_s "$TBGEN" send --src "${SRC4[0]},${SRC4[1]},${SRC4[2]},${SRC6[0]}" --dst "$DST4,$DST6" --seconds 2 >/dev/null
wait "$reader"

# At most one record a source a second (the default), over the reader's
# T seconds at most ceil(T) + 1; at least one of each source dropped.
per_source=$((($(now_ms) - t0 + 999) / 1000 + 1))
for a in "${SRC4[0]}" "${SRC4[1]}" "${SRC4[2]}" "${SRC6[0]}"; do
	n=$(jq -s --arg a "$a" '[.[] | select(.address == $a)] | length' "$tmp/events")
	check "events: $a's drops logged $n times, 1 to $per_source" [ "$n" -ge 1 -a "$n" -le "$per_source" ]
done
check "events: each says drop, over its rule's rate (or early), the rule and the frame" \
	jq -se 'length > 0 and all(.[]; .verdict == "drop" and (.why == "rate" or .why == "early") and .packets == 1 and .bytes > 1000 and
		(.rule == "default" or .rule == "198.18.0.11/32" or .rule == "198.18.0.12/32"))' "$tmp/events" >/dev/null
check "events: nothing lost or held back at this rate" [ "$(jq -s 'map(select(has("lost"))) | length' "$tmp/events")" = 0 ]
# A rate of 3 a second and no interval: the rest is held back, and said.
# The reader skips what came before it began, so the flood (2 s) starts
# after it has had time to: it sees the records of at least one whole
# second, and of at most four seconds' caps.
check "events set rate 3 interval 0" tb events set dev "$DEV_R" rate 3 interval 0
tb -j events dev "$DEV_R" seconds 3 >"$tmp/capped" &
reader=$!
sleep 0.5
in_s "$TBGEN" send --src "${SRC4[0]}" --dst "$DST4" --seconds 2 >/dev/null
wait "$reader"
n=$(jq -s 'map(select(has("verdict"))) | length' "$tmp/capped")
capped=$(jq -s 'map(.capped // 0) | add' "$tmp/capped")
check "events: $n records in 3 seconds at 3 a second" [ "$n" -ge 3 -a "$n" -le 12 ]
check "events: and says what it held back ($capped, as stats counts: $(tb -j stats dev "$DEV_R" | jq .events_capped))" \
	[ "$capped" -gt 100 -a "$capped" -le "$(tb -j stats dev "$DEV_R" | jq .events_capped)" ]
for words in "events set dev $DEV_R|nothing to set" "events set dev $DEV_R interval 1500us|whole number of milliseconds" \
	"events set dev $DEV_R rate -1|invalid rate" "events dev $DEV_R bogus|unknown keyword" \
	"events dev $DEV_R count 0|invalid count"; do
	# shellcheck disable=SC2086 # the words of a command
	out=$(tb ${words%%|*} 2>&1)
	rc=$?
	check "${words%%|*}: exit 2, says '${words#*|}' ($out)" bash -c "[ $rc = 2 ] && grep -qF -- '${words#*|}' <<<\"\$1\"" _ "$out"
done
check "events set rate 0 turns them off" tb events set dev "$DEV_R" rate 0
out=$(tb events dev "$DEV_R" seconds 1 2>&1)
rc=$?
check "events with them off: exit 1, says how to turn them on ($out)" \
	bash -c "[ $rc = 1 ] && grep -q 'events are off' <<<\"\$1\"" _ "$out"
tb events set dev "$DEV_R" rate 1000 interval 1s

top=$(tb -j show dev "$DEV_R" top 2 sort passed)
check "top 2 sort passed: two rows" [ "$(jq length <<<"$top")" = 2 ]
check "top 2 sort passed: heaviest first ($(jq -c 'map(.address)' <<<"$top"))" \
	[ "$(jq -r 'map(.address) | join(",")' <<<"$top")" = "198.18.0.12,198.18.0.11" ]
check "sort dropped orders by dropped bytes" \
	bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j show dev $DEV_R sort dropped | jq -e '[.[].dropped_bytes] | . == (sort | reverse)' >/dev/null"
row=$(tb -j show dev "$DEV_R" addr 198.18.0.12)
check "packet-mode row reports tokens_packets and its rule" \
	[ "$(jq -r '.[0] | "\(.rule) \(has("tokens_packets"))"' <<<"$row")" = "198.18.0.12/32 true" ]
row=$(tb -j show dev "$DEV_R" addr 2001:db8::10)
check "IPv6 row: rule default, tokens_bytes present" [ "$(jq -r '.[0] | "\(.rule) \(has("tokens_bytes"))"' <<<"$row")" = "default true" ]
check "IPv6 row: UDP teaches no round trip (long_rtt false)" [ "$(jq -r '.[0].long_rtt' <<<"$row")" = false ]
# The kernel's own MLD reports (from ::) may add a row besides the test's four.
check "text show: a header and a row for each test source" \
	[ "$(tb show dev "$DEV_R" | grep -cE '^(ADDRESS|198\.18\.0\.1[012]|2001:db8::10) ')" = 5 ]

stats=$(tb -j stats dev "$DEV_R")
sum=$(tb -j show dev "$DEV_R" | jq '[.[].passed_packets] | add')
check "stats: passed_packets equals the per-address sum ($sum)" [ "$(jq .passed_packets <<<"$stats")" = "$sum" ]
rows=$(tb -j show dev "$DEV_R" | jq length)
check "stats: addresses tracked and buckets created match show's $rows rows" \
	[ "$(jq '"\(.addresses_tracked) \(.buckets_created)"' <<<"$stats")" = "\"$rows $rows\"" ]
check "stats: every counter present" [ "$(jq 'keys | length' <<<"$stats")" = 28 ]
check "status: max-addrs 4096" [ "$(tb -j status dev "$DEV_R" | jq '.[0].max_addrs')" = 4096 ]
check "-p pretty-prints valid JSON" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j -p rule list dev $DEV_R | jq -e 'length == 3' >/dev/null"
check "rule list in tc's units" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -qx '198.18.0.12/32 rate 2Kpps burst 32pkt cost packets action drop scope per-address early on'"

check "-j -p show: every row, as valid JSON" \
	[ "$(nsenter --net=/var/run/netns/$NS_R $TBCTL -j -p show dev $DEV_R | jq length)" = "$rows" ]
check "-j show top 1 is the first of sort bytes" [ "$(tb -j show dev "$DEV_R" top 1 | jq -r '.[0].address')" = \
	"$(tb -j show dev "$DEV_R" sort bytes | jq -r '.[0].address')" ]

# Readers take no lock: with the device's lock held by a writer, they answer.
# The lock's holder is the sleep itself (exec), so that the kill below
# ends it, and the output it holds open with it.
bash -c 'exec 9>"$1" && flock 9 && exec sleep 20' holder "$(lockfile $NS_R $DEV_R)" &
holder=$!
lock_held "$(lockfile $NS_R $DEV_R)"
check "show answers while a writer holds the lock" timeout 5 nsenter --net=/var/run/netns/$NS_R $TBCTL show dev $DEV_R >/dev/null
check "stats answers while a writer holds the lock" timeout 5 nsenter --net=/var/run/netns/$NS_R $TBCTL stats dev $DEV_R >/dev/null
check "rule list answers while a writer holds the lock" timeout 5 nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R >/dev/null
check "a change waits for the writer (timeout's 124)" \
	bash -c "timeout 1 nsenter --net=/var/run/netns/$NS_R $TBCTL rule set dev $DEV_R default rate 1mbit burst 10k; [ \$? = 124 ]"
kill "$holder"
wait "$holder" 2>/dev/null

tokens=$(show_field 198.18.0.10 tokens_bytes)
check "reset counters" tb reset dev "$DEV_R" counters
row=$(tb -j show dev "$DEV_R" addr 198.18.0.10)
check "reset counters: zeroed" [ "$(jq '.[0] | .passed_packets + .dropped_packets' <<<"$row")" = 0 ]
check "reset counters: bucket kept" [ "$(jq length <<<"$row")" = 1 ]
check "reset counters: global stats zeroed" [ "$(tb -j stats dev "$DEV_R" | jq .passed_packets)" = 0 ]
# Slots of owed[] that record a bucket not yet full again.
owed_slots() {
	bpftool -j map dump pinned "$(pins $NS_R $DEV_R)/owed" |
		jq '[.[] | (.value | if type == "array" then map(select(. != "0x00")) | length else . end)
		     | select(. != 0)] | length'
}
check "charged buckets left what they owe in owed[] ($(owed_slots) slots)" [ "$(owed_slots)" -gt 0 ]
config_field() {
	bpftool -j map lookup pinned "$(pins $NS_R $DEV_R)/config" key 0 0 0 0 | jq -e ".formatted.value.$1"
}
# The rule-set generation, which CPUs' copies of buckets' bounds are kept under.
gen=$(config_field gen)
# The seed of the per-CPU caches' slots: drawn once, by the first attach.
seed=$(config_field slot_seed)
check "attach drew a seed for the caches' slots ($seed)" [ "$seed" != 0 ]
# A fresh attach places sets, lock stripes and owed[] slots by SipHash,
# under a 128-bit key of its own.
key=$(config_field place_key | jq -c .)
check "a fresh attach places by SipHash (place $(config_field place)) under a drawn key ($key), as status says" \
	[ "$(config_field place)" = 2 -a "$key" != "[0,0]" -a "$(tb -j status dev "$DEV_R" | jq -r '.[0].placement')" = siphash ]
check "reset buckets" tb reset dev "$DEV_R" buckets
check "reset buckets: the generation bumped ($gen to $(config_field gen)), so no CPU denies from a forgotten bucket's bound" \
	[ "$(config_field gen)" = $((gen + 1)) ]
check "reset buckets: no address tracked" [ "$(tb -j stats dev "$DEV_R" | jq .addresses_tracked)" = 0 ]
check "reset buckets: nothing owed either, every address starts full" [ "$(owed_slots)" = 0 ]
for f in -j "-j -p"; do
	check "$f show of an emptied table: a JSON array" \
		bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL $f show dev $DEV_R | jq -e 'type == \"array\"' >/dev/null"
done
check "reset buckets: rules kept" [ "$(tb -j rule list dev "$DEV_R" | jq length)" = 3 ]
check "a rule change" tb rule set dev "$DEV_R" default rate 2mbit
check "attach again" tb attach dev "$DEV_R" mode xdp max-addrs 4096
check "rule changes, resets and another attach keep the seed and the placement key" \
	[ "$(config_field slot_seed)" = "$seed" -a "$(config_field place_key | jq -c .)" = "$key" ]
summary
