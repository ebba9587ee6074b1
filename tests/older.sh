#!/usr/bin/env bash
# older.sh DIR: builds tbctl of the two layouts before this one from this repository's
# history, in turn, for tests/e2e/upgrade.sh: DIR/vN/build/tbctl, and
# DIR/vN.built once it is done, saying "ok", "archive" (the commit is not
# in the history) or "make" (it did not build; DIR/vN.log says why).
# tests/run.sh starts it first, at the lowest priority, so that the builds
# take the CPU the suites before the upgrade's leave; upgrade.sh run
# alone starts it itself. "older.sh --list" prints LAYOUT:COMMIT a line.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OLDER=(14:6a33b7a 15:f101340)
if [[ ${1:-} == --list ]]; then
	printf '%s\n' "${OLDER[@]}"
	exit 0
fi
dir=${1:?usage: older.sh DIR | --list}
mkdir -p "$dir"
for lc in "${OLDER[@]}"; do
	old=$dir/v${lc%%:*}
	rm -rf "$old" "$old.built"
	mkdir -p "$old"
	if ! git -C "$ROOT" archive "${lc#*:}" | tar -x -C "$old"; then
		echo archive >"$old.built"
	elif ! make -s -C "$old" BUILD=build build/tbctl >"$old.log" 2>&1; then
		echo make >"$old.built"
	else
		echo ok >"$old.built"
	fi
done
