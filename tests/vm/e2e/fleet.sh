#!/usr/bin/env bash
# Fleet caps in Debian's stock kernel: the end-to-end fleet test's even
# split and its store killed and restarted empty (tests/e2e/fleet.sh).
FLEET_QUICK=1 exec "$(dirname "$0")/../../e2e/fleet.sh"
