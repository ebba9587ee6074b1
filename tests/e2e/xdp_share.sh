#!/usr/bin/env bash
# XDP without libxdp's dispatcher (LIBXDP_SKIP_DISPATCHER=1, which libxdp
# honours too, and where the kernel loads no extension programs, as this
# machine's does not; tests/vm/e2e/xdp_dispatcher.sh shares the hook in
# Debian's kernel): tbctl's program attached alone, as libxdp falls back;
# another tool's program there makes the attach fail, naming it, and
# leaves nothing attached; tbctl's there makes the other tool fail and
# stays.
. "$(dirname "$0")/lib.bash"
setup
export LIBXDP_SKIP_DISPATCHER=1
# xdp-filter 1.3.1 leaves its lock file behind when a load fails, and
# then refuses to run at all: a lock whose process is gone is removed.
filter_unlock() {
	local pid
	pid=$(cat /run/xdp-filter.lck 2>/dev/null) || return 0
	[[ -n $pid && -d /proc/$pid ]] || rm -f /run/xdp-filter.lck
}
filter() { filter_unlock; nsenter --net=/var/run/netns/"$NS_R" xdp-filter "$@"; }
xdp_id() { ip -n "$NS_R" -j link show dev "$DEV_R" | jq -r '.[0].xdp.prog.id // 0'; }

check "xdp-filter attaches alone" filter load "$DEV_R" -m native
fid=$(xdp_id)
err=$(tb attach dev "$DEV_R" mode xdp 2>&1)
code=$?
check "tbctl's attach beside it fails: \"$err\"" \
	bash -c "[ $code != 0 ] && grep -q 'another XDP program is attached' <<<'$err'"
check "and leaves no pins" bash -c "! ls $(pins "$NS_R" "$DEV_R") 2>/dev/null"
check "xdp-filter's program stays ($fid)" [ "$(xdp_id)" = "$fid" ]
check "xdp-filter unloads" filter unload "$DEV_R"

check "tbctl attaches" tb attach dev "$DEV_R" mode xdp
hook=$(tb -j status dev "$DEV_R" | jq -r '.[0].xdp_hook')
check "alone on the hook (xdp_hook $hook)" [ "$hook" = direct ]
check "its program is the device's" [ "$(xdp_id)" = "$(prog_id tb)" ]
check "xdp-filter beside it fails" bash -c "! nsenter --net=/var/run/netns/$NS_R xdp-filter load $DEV_R -m native 2>/dev/null"
filter_unlock
check "tbctl's program stays" [ "$(xdp_id)" = "$(prog_id tb)" ]
old=$(prog_id tb)
check "a re-attach swaps it in place" tb attach dev "$DEV_R"
check "a new program on the hook" bash -c "[ $(xdp_id) != $old ] && [ $(xdp_id) = \$(nsenter --net=/var/run/netns/$NS_R $TBCTL -j status dev $DEV_R | jq .[0].prog_id) ]"
check "detach" tb detach dev "$DEV_R"
check "nothing on the hook" [ "$(xdp_id)" = 0 ]
summary
