#!/bin/bash
# Stage two inside the guest (tests/vm/run), on the overlay root: the
# file systems a test expects, then the job's command; its exit status goes
# back through the job share, and the guest powers off.
job=$1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t bpf bpf /sys/fs/bpf
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
ip link set lo up
: >"$job/booted"
cd "$(eval echo "$(cat "$job/cwd")")" || exit 1
eval "$(cat "$job/cmd")"
echo $? >"$job/rc"
sync
echo o >/proc/sysrq-trigger
/bin/busybox poweroff -f
