#!/usr/bin/env bash
# A bounded, seeded fuzz run: argument vectors and -batch files made by
# mutating valid commands with keywords, values and junk (control bytes,
# invalid UTF-8, huge numbers, malformed prefixes), run against an attached
# device. Every run must exit 0, 1 or 2, never by a signal; a failure must
# say what failed ("Error: ...", or a JSON error under -j), escape what it
# echoes, and leave the rules and the device exactly as they were; a batch
# that fails must name its line. Then a shorter run through a sanitizer
# build. FUZZ_SEED (TB_SEED by default), FUZZ_ARGV and FUZZ_BATCH set the
# seed and the number of runs: a sixth of TB_FULL=1's, which runs every
# case, so that another seed each run tries other cases.
. "$(dirname "$0")/lib.bash"
setup

SEED=${FUZZ_SEED:-$TB_SEED}
if [[ ${TB_FULL:-0} == 1 ]]; then full=6; else full=1; fi
NARGV=${FUZZ_ARGV:-$((333 * full))}
NBATCH=${FUZZ_BATCH:-$((33 * full))}
NASAN_ARGV=$((50 * full))
NASAN_BATCH=$((10 * full))
RANDOM=$SEED

check "attach" tb attach dev "$DEV_R" mode xdp
check "rules to start from" tb -batch - <<EOF
rule set dev $DEV_R default rate 8mbit burst 16k
rule set dev $DEV_R 198.18.0.0/24 rate 1mbit
rule set dev $DEV_R 2001:db8::/64 rate 2mbit scope shared
EOF

long=$(printf 'x%.0s' {1..5000})
words=(
	attach detach status rule set del list show stats reset save apply help metrics top -j -p -v -batch
	dev rate burst cost action scope early horizon mode key qdisc max-addrs addr top sort
	counters buckets default bytes packets drop mark shape monitor per-address shared on off
	xdp xdpgeneric tc-ingress tc-egress src dst fq passed dropped
)
values=(
	"$DEV_R" "$DEV_R" "$DEV_R" nosuchdev0 "" 1mbit 8mbit 10kbps 1.5mbit 100kibit 0 -1 1e99
	18446744073709551616bit 99999999999999999999 0x10mbit 1kbit 16k 1500 1 2m 64k 100ms 0.5s
	198.18.0.0/24 198.18.1.0/24 198.18.0.9 2001:db8::/64 2001:db8::1 "1.2.3.4/ 24" 1.2.3.4/+24
	::ffff:0:0/96 2001:db8::/129 198.18.0.0/33 300.1.1.1 "::" 0/0 1024 65536 999999999
	$'\x1b[31mred' $'a\xffb\xfe' $'tab\there' $'nl\nx' "$long" /nonexistent/file /tmp
)
pick() { # ARRAY-NAME: one element at random
	local -n arr=$1
	printf '%s' "${arr[RANDOM % ${#arr[@]}]}"
}
templates=(
	"rule set dev $DEV_R 198.18.2.0/24 rate 1mbit"
	"rule set dev $DEV_R default rate 4mbit burst 32k action mark"
	"rule del dev $DEV_R 198.18.0.0/24"
	"rule list dev $DEV_R"
	"show dev $DEV_R top 5 sort dropped"
	"show dev $DEV_R addr 198.18.0.10"
	"stats dev $DEV_R"
	"status dev $DEV_R"
	"save dev $DEV_R"
	"attach dev $DEV_R mode xdp max-addrs 65536"
	"reset dev $DEV_R counters"
	"metrics dev $DEV_R top 3"
	"top dev $DEV_R -n 1 interval 0.1 sort passed"
)
# mutate: a template with up to two tokens replaced, inserted or dropped,
# into ARGS.
mutate() {
	read -ra ARGS <<<"$(pick templates)"
	local n=$((RANDOM % 3)) i at
	for ((i = 0; i < n; i++)); do
		at=$((RANDOM % (${#ARGS[@]} + 1)))
		case $((RANDOM % 4)) in
		0) ARGS[at]=$(pick words) ;;
		1) ARGS[at]=$(pick values) ;;
		2) ARGS=("${ARGS[@]:0:at}" "$(pick values)" "${ARGS[@]:at}") ;;
		3) ARGS=("${ARGS[@]:0:at}" "${ARGS[@]:at+1}") ;;
		esac
	done
	# A detach would end the run's subject, and an exporter runs until it
	# is stopped: both are exercised elsewhere. top is bounded.
	local word=""
	for word in "${ARGS[@]}"; do [[ $word == -* ]] || break; done
	[[ " ${ARGS[*]} " == *" detach "* || $word == e* ]] && ARGS=(rule list dev "$DEV_R")
	[[ $word == t* ]] && ARGS+=(-n 1 interval 0.1)
	return 0
}
# A failed batch's attach line is undone by attaching as before: the same
# configuration, with the program loaded anew under another id. Taken
# after every run, so sed rather than jq, whose start costs as much as
# tbctl's run.
state() {
	tb -j rule list dev "$DEV_R"
	tb -j status dev "$DEV_R" | sed -E 's/"(prog_id|addresses)":[0-9]+,?//g'
}
# raw: control bytes (other than newline and tab) or invalid UTF-8.
raw() { LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]' "$1" || ! iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1; }

# judge RC SAID...: sets why to the check the run that exited RC fails
# (empty when it passes); SAID is a command that succeeds when the run
# named its error. A passing run's state becomes the new reference.
judge() {
	local rc=$1
	shift
	codes+=" $rc"
	why=""
	if ((rc > 2)); then
		why="exit $rc"
	elif ((rc != 0)) && ! "$@"; then
		why="no error named"
	elif ((rc != 0)) && [[ $(state) != "$snap" ]]; then
		why="failed but changed the state"
	elif raw "$tmp/err"; then
		why="raw bytes echoed"
	fi
	((rc == 0)) && snap=$(state)
	return 0
}
said_argv() { grep -q '^Error: ' "$tmp/err" || jq -e '.error' "$tmp/out" >/dev/null 2>&1; }
said_batch() { grep -Eq '^Error: (line [0-9]+|-batch)' "$tmp/err"; }

# fuzz_argv N BIN: N mutated argument vectors through BIN.
fuzz_argv() {
	bad=0 codes=""
	snap=$(state)
	for ((r = 0; r < $1; r++)); do
		mutate
		timeout 10 nsenter --net=/var/run/netns/"$NS_R" "$2" "${ARGS[@]}" </dev/null >"$tmp/out" 2>"$tmp/err"
		judge $? said_argv
		if [[ -z $why && " ${ARGS[*]} " == *" -j "* ]] && raw "$tmp/out"; then
			why="raw bytes in JSON"
		fi
		[[ -n $why ]] || continue
		bad=$((bad + 1))
		((bad <= 5)) && printf 'fuzz argv %d (%s):' "$r" "$why" && printf ' %q' "${ARGS[@]}" && echo &&
			head -c 300 "$tmp/err"
	done
}
summary_codes() { tr ' ' '\n' <<<"$codes" | grep . | sort | uniq -c | awk '{ printf "%s%s x%s", s, $2, $1; s = ", " }'; }
fuzz_argv "$NARGV" "$TBCTL"
check "$NARGV mutated argument vectors (seed $SEED; exits $(summary_codes)): every one exited 0-2 with a clear, escaped error and no half-change" [ "$bad" = 0 ]
check "the fuzzing reached every exit code" bash -c "grep -q ' 0' <<<'$codes' && grep -q ' 1' <<<'$codes' && grep -q ' 2' <<<'$codes'"

# Batch files: several mutated lines, at times a junk line (a NUL byte, a
# help, an over-long line). Each must apply whole or not at all.
# fuzz_batch N BIN: N mutated batch files through BIN.
fuzz_batch() {
	bad=0 codes=""
	snap=$(state)
	for ((r = 0; r < $1; r++)); do
		: >"$tmp/batch"
		for ((l = 1 + RANDOM % 6; l > 0; l--)); do
			case $((RANDOM % 8)) in
			0) printf 'rule set dev %s 198.18.%d.0/24 rate 1mbit\0x\n' "$DEV_R" $((RANDOM % 250)) >>"$tmp/batch" ;;
			1) printf 'help\n' >>"$tmp/batch" ;;
			2) printf 'rule set dev %s default rate %s\n' "$DEV_R" "$long" >>"$tmp/batch" ;;
			*) mutate; printf '%s\n' "${ARGS[*]}" >>"$tmp/batch" ;;
			esac
		done
		timeout 20 nsenter --net=/var/run/netns/"$NS_R" "$2" -batch "$tmp/batch" >"$tmp/out" 2>"$tmp/err"
		judge $? said_batch
		[[ -n $why ]] || continue
		bad=$((bad + 1))
		((bad <= 5)) && echo "fuzz batch $r ($why):" && cat -v "$tmp/batch" | head -c 600 && head -c 300 "$tmp/err"
	done
}
fuzz_batch "$NBATCH" "$TBCTL"
check "$NBATCH mutated batch files (exits $(summary_codes)): each applied whole or not at all, failures name a line" [ "$bad" = 0 ]

# The same through a build with AddressSanitizer, UBSan and LeakSanitizer:
# a report exits 99, which the checks above count as a failure. Built on
# every core: what runs beside it judges no timing.
check "an ASan/UBSan build of tbctl" make -s -j"$(nproc)" -C "$ROOT" BUILD="$tmp/asan" \
	CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" "$tmp/asan/tbctl"
export ASAN_OPTIONS=detect_leaks=1:exitcode=99 UBSAN_OPTIONS=exitcode=99
fuzz_argv $NASAN_ARGV "$tmp/asan/tbctl"
check "$NASAN_ARGV argument vectors under the sanitizers (exits $(summary_codes)): no report, same checks" [ "$bad" = 0 ]
fuzz_batch $NASAN_BATCH "$tmp/asan/tbctl"
check "$NASAN_BATCH batch files under the sanitizers (exits $(summary_codes)): no report, same checks" [ "$bad" = 0 ]
unset ASAN_OPTIONS UBSAN_OPTIONS
check "the device is still attached and answering" tb status dev "$DEV_R"
summary
