#!/usr/bin/env bash
# The layers only look down (docs/design.md, "Layout"). In user space no
# file of a layer includes a header of a layer it may not use, no object
# of it calls a function or reads a variable defined in such a layer, and
# the library prints nothing (it returns errors; the CLI says them). In
# the datapath the pure logic, which the host tests too, includes no map,
# and no stage a control program. Reads the sources, and the objects
# that make test has built.
#   tests/layering.sh [OBJDIR]   (build/obj by default)
set -u
cd "$(dirname "$0")/.."
OBJ=${1:-${BUILD:-build}/obj}
PASS=0 FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }

# What each layer may use, itself included.
declare -A USES=(
	[lib]="lib"
	[view]="lib view"
	[fleet]="lib fleet"
	[exporter]="lib view exporter"
	[cli]="lib view fleet exporter cli"
)
may_use() { [[ " ${USES[$1]} " == *" $2 "* ]]; }

# Every user-space file sits in a layer's folder.
stray=$(find user -type f \( -name '*.c' -o -name '*.h' \) | while read -r f; do
	l=${f#user/}
	l=${l%%/*}
	[[ -n ${USES[$l]:-} ]] || echo "$f"
done)
if [[ -z $stray ]]; then ok "every file of user/ is in a layer's folder"; else fail "outside any layer: $stray"; fi

# Includes: "LAYER/file.h" names its layer.
for l in "${!USES[@]}"; do
	bad=""
	for f in user/"$l"/*.[ch]; do
		while IFS=: read -r n inc; do
			to=${inc%%/*}
			[[ -n ${USES[$to]:-} ]] || continue
			may_use "$l" "$to" || bad+="$f:$n includes \"$inc\"; "
		done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$f" | sed -E 's/^([0-9]+):[^"]*"([^"]+)".*/\1:\2/')
	done
	if [[ -z $bad ]]; then ok "$l includes only from: ${USES[$l]}"; else fail "$l looks up: $bad"; fi
done

# Calls and variables: what each object leaves undefined must not be
# defined by an object of a layer it may not use.
declare -A DEFINED_IN
for o in "$OBJ"/user/*/*.o; do
	l=${o#"$OBJ"/user/}
	l=${l%%/*}
	while read -r sym; do DEFINED_IN[$sym]="$l ${o#"$OBJ"/}"; done < <(nm --defined-only -g "$o" | awk '{print $3}')
done
if ((${#DEFINED_IN[@]} == 0)); then
	fail "no objects under $OBJ/user (build first: make all)"
fi
for l in "${!USES[@]}"; do
	bad=""
	for o in "$OBJ"/user/"$l"/*.o; do
		[[ -e $o ]] || continue
		while read -r sym; do
			def=${DEFINED_IN[$sym]:-}
			[[ -n $def ]] || continue
			may_use "$l" "${def%% *}" || bad+="${o#"$OBJ"/} uses $sym of ${def#* }; "
		done < <(nm -u "$o" | awk '{print $2}')
	done
	if [[ -z $bad ]]; then ok "$l calls only into: ${USES[$l]}"; else fail "$l calls up: $bad"; fi
done

# The library and the fleet agent print nothing of their own: they say
# what failed in their errors, and their callers print.
for l in lib fleet; do
	bad=""
	for o in "$OBJ"/user/"$l"/*.o; do
		s=$(nm -u "$o" | awk '{print $2}' | grep -xE 'printf|puts|perror|stdout|stderr|__printf_chk|vprintf|putchar' | tr '\n' ' ')
		[[ -z $s ]] || bad+="${o#"$OBJ"/}: $s; "
	done
	if [[ -z $bad ]]; then ok "$l prints nothing"; else fail "$l prints: $bad"; fi
done

# The datapath: bpf/LAYER/*.h; the entry points (*.bpf.c) may use all.
declare -A BPF_USES=(
	[abi]="abi"
	[logic]="abi logic"
	[stages]="abi logic stages"
	[control]="abi logic stages control"
)
for l in "${!BPF_USES[@]}"; do
	bad=""
	for f in bpf/"$l"/*.h; do
		while IFS=: read -r n inc; do
			to=${inc%%/*}
			[[ -n ${BPF_USES[$to]:-} ]] || continue
			[[ " ${BPF_USES[$l]} " == *" $to "* ]] || bad+="$f:$n includes \"$inc\"; "
		done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$f" | sed -E 's/^([0-9]+):[^"]*"([^"]+)".*/\1:\2/')
	done
	if [[ -z $bad ]]; then ok "bpf/$l includes only from: ${BPF_USES[$l]}"; else fail "bpf/$l looks up: $bad"; fi
done
stray=$(find bpf -type f -name '*.h' | while read -r f; do
	l=${f#bpf/}
	l=${l%%/*}
	[[ -n ${BPF_USES[$l]:-} ]] || echo "$f"
done)
if [[ -z $stray ]]; then ok "every header of bpf/ is in a layer's folder"; else fail "outside any layer: $stray"; fi

echo "$PASS passed, $FAIL failed"
((FAIL == 0))
