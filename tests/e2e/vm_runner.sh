#!/usr/bin/env bash
# tests/vm/run itself: it boots Debian's kernel (amd64's, and arm64's
# emulated), runs a command there in the directory asked for, returns its
# output and exit status, and keeps the guest's writes out of this
# machine's file system. That a command that succeeds returns 0 the VM
# stages show, every run: run_suites fails a suite that exits non-zero.
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

# arm64: Debian's arm64 kernel on its arm64 packages, this checkout shared
# at its own path, writable in the guest only.
"$ROOT/tests/vm/run" --arch arm64 --timeout 300 --cwd "$ROOT/tests" -- \
	bash -c 'echo "kernel $(uname -r) $(uname -m) cwd $PWD"; echo written >vm-marker-'$$'; cat vm-marker-'$$'; exit 5' \
	>"$out" 2>&1
rc=$?
guest=$(tr -d '\r' <"$out" | awk '$1 == "kernel" { print $2, $3 }')
check "arm64: the command's exit status comes back (5, got $rc)" [ "$rc" = 5 ]
check "arm64: it ran in Debian's arm64 kernel ($guest)" bash -c "[[ '$guest' == *-arm64\ aarch64 ]]"
check "arm64: in the checkout, at its own path" grep -q "cwd $ROOT/tests\$" <(tr -d '\r' <"$out")
check "arm64: the guest may write in the checkout" grep -q "^written" <(tr -d '\r' <"$out")
check "arm64: its writes stay in the guest" [ ! -e "$ROOT/tests/vm-marker-$$" ]
"$ROOT/tests/vm/run" --arch riscv64 -- true >"$out" 2>&1
rc=$?
check "a machine it cannot boot is refused with 2, naming it" bash -c "[ $rc = 2 ] && grep -q riscv64 '$out'"
summary
