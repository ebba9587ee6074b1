#!/usr/bin/env bash
# tests/vm/run itself: it boots Debian's kernel, runs a command there in
# the directory asked for, returns its output and exit status, and keeps
# the guest's writes out of this machine's file system. That a command
# that succeeds returns 0 the VM stage shows, every run: run_suites fails
# a suite that exits non-zero.
. "$(dirname "$0")/lib.bash"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
marker=/tmp/tbvm-marker-$$

"$ROOT/tests/vm/run" --timeout 300 --cwd /usr/share -- \
	bash -c 'echo "kernel $(uname -r) cwd $PWD"; echo written >'"$marker"'; cat '"$marker"'; exit 7' >"$out" 2>&1
rc=$?
guest=$(tr -d '\r' <"$out" | awk '$1 == "kernel" { print $2 }')
check "the command's exit status comes back (7, got $rc)" [ "$rc" = 7 ]
check "it ran in Debian's kernel ($guest), not this one ($(uname -r))" \
	bash -c "[[ '$guest' == *-amd64 && '$guest' != '$(uname -r)' ]]"
check "it ran in the directory asked for" grep -q "cwd /usr/share" "$out"
check "the guest may write anywhere" grep -q "^written" <(tr -d '\r' <"$out")
check "its writes stay in the guest" [ ! -e "$marker" ]
"$ROOT/tests/vm/run" --bogus >/dev/null 2>&1
check "a usage error returns 2" [ $? = 2 ]
summary
