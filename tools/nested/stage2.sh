#!/bin/sh
# Stage 2 of the L1 compute node (tools/nested/node.py), run by the
# initramfs with switch_root on the overlay of the machine's root: mount
# the kernel file systems, name the host, make the L1 kernel's modules
# visible, run the job from the shared output directory, power off.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
arg() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" /proc/cmdline; }
out=$(arg nested_out)
modules=$(arg nested_modules)
# oslo.config refuses the kernel's default host name "(none)".
hostname compute-l1
mkdir -p "$out" /lib/modules
mount -t 9p -o trans=virtio,version=9p2000.L out "$out"
mount --bind "$modules/lib/modules" /lib/modules
cd "$out" || exit 1
echo "nested: stage 2 running the job"
/bin/sh ./job.sh > job.out 2>&1
echo $? > job.rc.tmp
mv job.rc.tmp job.rc
sync
echo o > /proc/sysrq-trigger
