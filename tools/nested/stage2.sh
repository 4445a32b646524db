#!/bin/sh
# Stage 2 of the L1 compute node (tools/nested/node.py), run by the
# initramfs with switch_root on the overlay of the machine's root: mount
# the kernel file systems, name the host, make the L1 kernel's modules
# visible, bring up the user-mode network, run the job from the shared
# output directory, power off.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
# What udev would link: mdevctl (libvirt's nodedev create of a mediated
# device) reads its JSON from /dev/stdin.
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
# /tmp stays the machine's (under the overlay, writes go to L1's tmpfs
# upper layer): a checkout, venv or cache under /tmp must be there too.
mount -t tmpfs tmpfs /run
arg() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" /proc/cmdline; }
out=$(arg nested_out)
modules=$(arg nested_modules)
# oslo.config refuses the kernel's default host name "(none)".
hostname compute-l1
mkdir -p "$out" /lib/modules
mount -t 9p -o trans=virtio,version=9p2000.L out "$out"
mount --bind "$modules/lib/modules" /lib/modules
# User-mode network (QEMU's slirp): the machine's loopback services are
# at 10.0.2.2.
ip link set lo up
if modprobe virtio_net && ip link show eth0 > /dev/null 2>&1; then
    ip link set eth0 up
    ip addr add 10.0.2.15/24 dev eth0
    ip route add default via 10.0.2.2
fi
cd "$out" || exit 1
echo "nested: stage 2 running the job"
/bin/sh ./job.sh > job.out 2>&1
echo $? > job.rc.tmp
mv job.rc.tmp job.rc
sync
echo o > /proc/sysrq-trigger
