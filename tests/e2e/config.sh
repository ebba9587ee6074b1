#!/usr/bin/env bash
# save and apply: a device's rules (and its events' sampling) written out
# and made again, exactly; apply changes only what differs and checks the
# whole file first.
. "$(dirname "$0")/lib.bash"
setup

slots() { nsenter --net=/var/run/netns/"$NS_R" "$B/tbbench" slots --dev "$DEV_R" | sort -k2; }
rules() { tb rule list dev "$DEV_R"; }

check "attach" tb attach dev "$DEV_R" max-addrs 8192
check "rules of every kind" tb -batch - <<EOF
rule set dev $DEV_R default rate 10mbit burst 64k
rule set dev $DEV_R 198.18.0.0/24 rate 2kpps burst 32 cost packets
rule set dev $DEV_R 2001:db8::/48 rate 5mbit action monitor
rule set dev $DEV_R 198.18.5.0/24 rate 20mbit scope shared early off
rule set dev $DEV_R 198.18.6.0/24 rate 1234567bit action mark
rule set dev $DEV_R 198.18.0.16/28 action pass
EOF
check "events set rate 50 interval 250ms" tb events set dev "$DEV_R" rate 50 interval 250ms
tb save dev "$DEV_R" >"$tmp/saved"
check "save: the events' sampling" grep -qx "events set dev $DEV_R rate 50 interval 250ms" "$tmp/saved"
check "save: an attach line and a line per rule" [ "$(grep -c '^attach\|^rule set' "$tmp/saved")" = 7 ]
check "save: an allow-list entry as it was set" grep -qx "rule set dev $DEV_R 198.18.0.16/28 action pass" "$tmp/saved"
check "rule list: the allow-list entry, with no rate" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -qx '198.18.0.16/28 action pass'"
check "rule list -j: its action, and no rate" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL -j rule list dev $DEV_R |
	jq -e '.[] | select(.prefix == \"198.18.0.16/28\") | .action == \"pass\" and (has(\"rate_bytes_per_sec\") | not)' >/dev/null"
check "save: the attach options" grep -qx "attach dev $DEV_R mode xdp key src max-addrs 8192" "$tmp/saved"
before=$(rules)

check "detach" tb detach dev "$DEV_R"
check "attach again" tb attach dev "$DEV_R" max-addrs 8192
check "apply the saved file" tb apply dev "$DEV_R" "$tmp/saved"
check "round trip: the same rule list" [ "$(rules)" = "$before" ]
check "round trip: save again gives the same file" [ "$(tb save dev "$DEV_R" | tail -n +2)" = "$(tail -n +2 "$tmp/saved")" ]
check "-batch runs a saved file too" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL detach dev $DEV_R &&
	nsenter --net=/var/run/netns/$NS_R $TBCTL -batch $tmp/saved"
check "-batch of the saved file: the same rule list" [ "$(rules)" = "$before" ]

# A changed file: one rate changed, one rule gone, one added.
slots_before=$(slots)
sed -e "s|^rule set dev $DEV_R 198.18.5.0/24 rate [0-9]*bps|rule set dev $DEV_R 198.18.5.0/24 rate 40mbit|" \
	-e "/2001:db8::\/48/d" "$tmp/saved" >"$tmp/changed"
echo "rule set dev $DEV_R 198.18.7.0/24 rate 3mbit" >>"$tmp/changed"
check "apply a changed file" tb apply dev "$DEV_R" "$tmp/changed"
check "the changed rate" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -q '^198.18.5.0/24 rate 40Mbit'"
check "the rule the file lacks is gone" lacks '^2001:db8::/48' nsenter --net="/var/run/netns/$NS_R" "$TBCTL" rule list dev "$DEV_R"
check "the added rule" bash -c "nsenter --net=/var/run/netns/$NS_R $TBCTL rule list dev $DEV_R | grep -q '^198.18.7.0/24 rate 3Mbit'"
for p in default 198.18.0.0/24 198.18.6.0/24; do
	check "unchanged rule $p keeps its slot (and so its buckets)" \
		[ "$(grep " $p " <<<"$slots_before")" = "$(slots | grep " $p ")" ]
done
check "apply the same file again changes nothing" bash -c "s=\$(nsenter --net=/var/run/netns/$NS_R $B/tbbench slots --dev $DEV_R | sort -k2);
	nsenter --net=/var/run/netns/$NS_R $TBCTL apply dev $DEV_R $tmp/changed &&
	[ \"\$s\" = \"\$(nsenter --net=/var/run/netns/$NS_R $B/tbbench slots --dev $DEV_R | sort -k2)\" ]"

# Bad files change nothing and name their line.
now=$(rules)
bad() { # WHAT EXIT PATTERN FILE-LINE...
	local what=$1 code=$2 pat=$3 err rc
	shift 3
	printf '%s\n' "$@" >"$tmp/bad"
	err=$(tb apply dev "$DEV_R" "$tmp/bad" 2>&1)
	rc=$?
	check "apply, $what: exit $code (got $rc)" [ "$rc" = "$code" ]
	check "apply, $what: says '$pat' ($err)" grep -qF -- "$pat" <<<"$err"
	check "apply, $what: rules unchanged" [ "$(rules)" = "$now" ]
}
bad "another device's rule" 2 "line 2: rule set dev lo: this file applies to dev $DEV_R" \
	"rule set dev $DEV_R default rate 1mbit" "rule set dev lo default rate 1mbit"
bad "a prefix twice" 2 "line 3: rule set dev $DEV_R: 198.18.9.0/24 is set twice (line 2)" \
	"# comment" "rule set dev $DEV_R 198.18.9.0/24 rate 1mbit" "rule set dev $DEV_R 198.18.9.0/24 rate 2mbit"
bad "a rule del" 2 "line 1: apply takes rule set, events set and ban add lines (and the device's attach line), not rule del" \
	"rule del dev $DEV_R 198.18.7.0/24"
bad "a bad rate" 2 "line 2: rule set: invalid rate" \
	"rule set dev $DEV_R 198.18.9.0/24 rate 1mbit" "rule set dev $DEV_R default rate 5furlongs"
# Words past the 64th were once dropped unsaid: "early off" here.
long="rule set dev $DEV_R 198.18.9.0/24 rate 1mbit$(printf ' burst 10k%.0s' $(seq 28)) early off"
bad "a line of more than 64 words" 2 "line 2: more than 64 words" "rule set dev $DEV_R default rate 1mbit" "$long"
bad "another mode" 1 "line 1: attach dev $DEV_R: attached as mode xdp key src, not mode tc-ingress key src; detach first" \
	"attach dev $DEV_R mode tc-ingress"
err=$(tb apply dev "$DEV_R" "$tmp/nonesuch" 2>&1)
check "apply of a missing file: exit 1 and says so ($err)" \
	bash -c "[ $? = 1 ] && grep -qF 'apply dev $DEV_R: open $tmp/nonesuch: No such file or directory' <<<\"\$1\"" _ "$err"
summary
