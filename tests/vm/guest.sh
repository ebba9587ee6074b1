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
# A /run of its own (the host's holds its locks and namespaces); /tmp and
# everything else is the host's, written only in the overlay.
mount -t tmpfs tmpfs /run
mount -t bpf bpf /sys/fs/bpf
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
ip link set lo up
: >"$job/booted"
if cd "$(eval echo "$(cat "$job/cwd")")"; then
	eval "$(cat "$job/cmd")"
	echo $? >"$job/rc"
else
	echo 126 >"$job/rc"
fi
sync
# Power off synchronously: the kernel's sysrq poweroff is asynchronous, and
# anything run after it may find the 9p root already gone (EIO).
/bin/busybox poweroff -f
# Only if busybox could not run: the kernel's own, and PID 1 must not
# exit meanwhile (that panics), so it waits in builtins.
echo o >/proc/sysrq-trigger
while :; do read -rt 1 || :; done
