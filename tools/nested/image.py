# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""The L1 compute node's boot files: a Debian kernel with its modules and
a small initramfs, built once into a cache directory.

* Kernel: the package ``linux-image-amd64`` depends on, fetched with
  ``apt-get download`` (Debian's apt only), unpacked with ``dpkg-deb -x``
  and indexed with ``depmod -b`` (package ``kmod``); L1 bind-mounts its
  ``lib/modules`` so that ``modprobe vfio-pci`` works there.
* Initramfs: ``busybox`` (package ``busybox-static``), the modules that
  mount the machine's ``/`` over 9p under a tmpfs overlay, and an
  ``init`` that does so and ``switch_root``\\ s into it, running the
  stage-2 script named on the kernel command line (``stage2=``).

Cache: ``$NOVA_ACCEL_NESTED_CACHE`` or ``~/.cache/nova-accel-nested``.
"""

import gzip
import hashlib
import lzma
import os
import shutil
import struct
import subprocess
import tempfile
import zlib

#: Modules the initramfs loads, in this order (``virtio`` needs
#: ``virtio_ring`` first; 9p needs netfs and fscache in Linux 6.1).
INITRAMFS_MODULES = (
    'virtio_ring', 'virtio', 'virtio_pci_modern_dev',
    'virtio_pci_legacy_dev', 'virtio_pci', '9pnet', '9pnet_virtio',
    'netfs', 'fscache', '9p', 'overlay')
BUSYBOX = '/bin/busybox'
INIT = r'''#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in %(modules)s; do insmod /modules/$m.ko || echo "insmod $m failed"; done
stage2=$(sed -n 's/.*stage2=\([^ ]*\).*/\1/p' /proc/cmdline)
mkdir -p /lower /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro hostroot /lower || {
    echo "nested: cannot mount the machine's root over 9p"; poweroff -f; }
mount -t tmpfs -o size=512m tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay \
    -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot
echo "nested: stage 1 done, running $stage2"
exec switch_root /newroot /bin/sh "$stage2"
'''


#: The guest init's ``list``: every PCI function under ``$pci``, one
#: ``guest-pci <address> <vendor>:<device> numa=<node>`` line each, into
#: ``$now``.  Shell builtins only (``read``, ``${d##*/}``): under TCG
#: inside TCG each fork costs the guest's one vCPU tens of milliseconds,
#: and the watch loop lists every 3 s for the guest's whole life.
GUEST_LIST = r'''list() {
    now=
    for d in $pci/*; do
        [ -e "$d/vendor" ] || continue
        read vendor < "$d/vendor"
        read device < "$d/device"
        numa=
        [ -e "$d/numa_node" ] && read numa < "$d/numa_node"
        now="${now}guest-pci ${d##*/} $vendor:$device numa=$numa
"
    done
}
'''
GUEST_INIT = r'''#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
# Each boot says which one it is: a console kept across boots (or two
# boots printing the same list) still tells the new boot's list apart.
read boot < /proc/sys/kernel/random/boot_id
echo "guest: boot $boot"
pci=/sys/bus/pci/devices
''' + GUEST_LIST + r'''list
echo "guest: PCI functions"
printf '%s' "$now"
echo "guest: done"
if grep -q guest_watch /proc/cmdline; then
    # A guest of Nova's: stay up and print the list again on each change
    # (hot-add and hot-remove).
    prev=$now
    while true; do
        sleep 3
        list
        if [ "$now" != "$prev" ]; then
            echo "guest: PCI functions changed"
            printf '%s' "$now"
            echo "guest: done"
            prev=$now
        fi
    done
fi
sleep 2
poweroff -f
'''


def _is_static(path):
    """True for an ELF executable without a program interpreter (a
    dynamic one names ``ld-linux`` in its first page)."""
    try:
        with open(path, 'rb') as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.startswith(b'\x7fELF') and b'ld-linux' not in head


def cache_dir():
    """The cache directory (created)."""
    path = os.environ.get('NOVA_ACCEL_NESTED_CACHE') or os.path.expanduser(
        '~/.cache/nova-accel-nested')
    os.makedirs(path, exist_ok=True)
    return path


def _need(program, package):
    if shutil.which(program) is None:
        raise RuntimeError('%s not found: install the Debian package %s '
                           '(bindep.txt, profile nested)' % (program,
                                                             package))


def kernel_package():
    """The name of the kernel package ``linux-image-amd64`` depends on,
    e.g. ``linux-image-6.1.0-56-amd64``.

    :raises RuntimeError: apt does not know it.
    """
    out = subprocess.run(['apt-cache', 'depends', 'linux-image-amd64'],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        line = line.strip()
        if line.startswith('Depends: linux-image-'):
            return line.split()[1]
    raise RuntimeError('apt-cache knows no linux-image-amd64: run apt-get '
                       'update (Debian 12 sources)')


def kernel(log=print):
    """Fetch and unpack the kernel once.

    :returns: ``(vmlinuz path, modules root dir, kernel version)``; the
        modules root holds ``lib/modules/<version>``.
    :raises RuntimeError: a missing tool or a failed download, with the
        fix in the message.
    """
    for program, package in (('apt-get', 'apt'), ('dpkg-deb', 'dpkg'),
                             ('depmod', 'kmod')):
        _need(program, package)
    package = kernel_package()
    version = package[len('linux-image-'):]
    root = os.path.join(cache_dir(), package)
    vmlinuz = os.path.join(root, 'boot', 'vmlinuz-%s' % version)
    if not os.path.exists(os.path.join(root, '.done')):
        log('nested: fetching %s (once, about 70 MB)' % package)
        shutil.rmtree(root, ignore_errors=True)
        with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
            os.chmod(tmp, 0o755)  # apt's sandbox user must write there
            done = subprocess.run(['apt-get', 'download', package],
                                  cwd=tmp, capture_output=True, text=True)
            debs = [f for f in os.listdir(tmp) if f.endswith('.deb')]
            if done.returncode or not debs:
                raise RuntimeError('apt-get download %s failed: %s' % (
                    package, done.stderr.strip()[-300:]))
            subprocess.run(['dpkg-deb', '-x', os.path.join(tmp, debs[0]),
                            root], check=True)
        subprocess.run(['depmod', '-b', root, version], check=True)
        open(os.path.join(root, '.done'), 'w').close()
    return vmlinuz, root, version


#: Compressed payloads of a bzImage ``guest_kernel`` can unpack: its
#: ``payload_offset`` points at one of these magics (the kernel's
#: ``Documentation/x86/boot.rst``). Both stop at the end of the stream:
#: the 4 bytes of size after it are not part of it.
_PAYLOADS = (
    (b'\xfd7zXZ\x00',
     lambda data: lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(data)),
    (b'\x1f\x8b',
     lambda data: zlib.decompressobj(wbits=31).decompress(data)))


def guest_kernel(log=print):
    """The kernel of the guest image (L2): ``kernel()``'s, unpacked once
    from its bzImage into its ELF ``vmlinux`` (``vmlinux_of``) when it
    is built with ``CONFIG_PVH`` (Debian's is), else the bzImage itself.

    QEMU boots a PVH ``vmlinux`` given as ``-kernel`` directly (its PVH
    ELF note), so the guest skips the bzImage's own decompression (xz in
    Debian's kernel), the slowest part of its boot under TCG inside TCG.

    :returns: path of the kernel to upload (str).
    """
    vmlinuz, root, version = kernel(log=log)
    with open(os.path.join(root, 'boot', 'config-%s' % version)) as f:
        if 'CONFIG_PVH=y' not in f.read().split('\n'):
            return vmlinuz
    path = os.path.join(cache_dir(), 'guest-vmlinux-%s' % version)
    if os.path.exists(path):
        return path
    log('nested: unpacking the guest kernel (vmlinux, PVH boot)')
    with open(vmlinuz, 'rb') as f:
        elf = vmlinux_of(f.read())
    if elf is None:
        return vmlinuz
    with tempfile.NamedTemporaryFile(dir=cache_dir(), delete=False) as f:
        f.write(elf)
    os.rename(f.name, path)
    return path


def vmlinux_of(bzimage):
    """The ELF ``vmlinux`` a bzImage carries, unpacked.

    The payload's place and length are the bzImage header's
    ``payload_offset`` and ``payload_length`` (boot protocol 2.08+, the
    kernel's ``Documentation/x86/boot.rst``): ``setup_sects`` at 0x1f1
    (0 means 4), the protected-mode code at ``(setup_sects + 1) * 512``,
    the two fields at 0x248 and 0x24c, the offset relative to that code.

    :param bzimage: the bzImage's bytes.
    :returns: the ELF's bytes, or None when the payload is neither xz nor
        gzip or holds no ELF.
    """
    start = ((bzimage[0x1f1] or 4) + 1) * 512
    offset, length = struct.unpack_from('<II', bzimage, 0x248)
    payload = bzimage[start + offset:start + offset + length]
    unpack = next((fn for magic, fn in _PAYLOADS
                   if payload.startswith(magic)), None)
    elf = unpack(payload) if unpack else b''
    return elf if elf.startswith(b'\x7fELF') else None


def _cpio_gz(tree, path):
    """Write directory ``tree`` as a gzip-compressed newc cpio archive."""
    names = subprocess.run(['find', '.'], cwd=tree, capture_output=True,
                           check=True).stdout
    archive = subprocess.run(['cpio', '-o', '-H', 'newc', '--quiet'],
                             cwd=tree, input=names, capture_output=True,
                             check=True).stdout
    with gzip.open(path + '.tmp', 'wb') as f:
        f.write(archive)
    os.replace(path + '.tmp', path)


def guest_initramfs(log=print):
    """The initramfs of the guest image (L2): busybox and an ``init``
    that prints every PCI function it sees (``guest-pci <address>
    <vendor>:<device> numa=<node>``, ``0x`` ids as sysfs shows them) on
    the console, then powers off; with ``guest_watch`` on its kernel
    command line it stays up instead and prints the list again whenever
    it changes (``guest: PCI functions changed``).  Booted with the L1
    kernel (``kernel()``).

    :returns: path of the archive.
    """
    _need('cpio', 'cpio')
    if not _is_static(BUSYBOX):
        raise RuntimeError('a static %s is needed: install the Debian '
                           'package busybox-static' % BUSYBOX)
    digest = hashlib.sha256(GUEST_INIT.encode()).hexdigest()[:12]
    path = os.path.join(cache_dir(), 'guest-initramfs-%s.cpio.gz' % digest)
    if os.path.exists(path):
        return path
    log('nested: building the guest initramfs')
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        for sub in ('bin', 'proc', 'sys', 'dev'):
            os.makedirs(os.path.join(tmp, sub))
        shutil.copy(BUSYBOX, os.path.join(tmp, 'bin', 'busybox'))
        init = os.path.join(tmp, 'init')
        with open(init, 'w') as f:
            f.write(GUEST_INIT)
        os.chmod(init, 0o755)
        _cpio_gz(tmp, path)
    return path


def initramfs(modules_root, version, log=print):
    """Build the initramfs once per kernel.

    :returns: path of the gzip-compressed newc cpio archive.
    :raises RuntimeError: busybox or cpio is missing.
    """
    _need('cpio', 'cpio')
    if not _is_static(BUSYBOX):
        raise RuntimeError('a static %s is needed: install the Debian '
                           'package busybox-static' % BUSYBOX)
    path = os.path.join(cache_dir(), 'initramfs-%s.cpio.gz' % version)
    if os.path.exists(path):
        return path
    log('nested: building the initramfs')
    kmods = os.path.join(modules_root, 'lib', 'modules', version)
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        for sub in ('bin', 'proc', 'sys', 'dev', 'modules'):
            os.makedirs(os.path.join(tmp, sub))
        shutil.copy(BUSYBOX, os.path.join(tmp, 'bin', 'busybox'))
        found = {}
        for dirpath, _, files in os.walk(kmods):
            for f in files:
                if f.endswith('.ko'):
                    found.setdefault(f[:-3], os.path.join(dirpath, f))
        for name in INITRAMFS_MODULES:
            shutil.copy(found[name], os.path.join(tmp, 'modules',
                                                  name + '.ko'))
        init = os.path.join(tmp, 'init')
        with open(init, 'w') as f:
            f.write(INIT % {'modules': ' '.join(INITRAMFS_MODULES)})
        os.chmod(init, 0o755)
        _cpio_gz(tmp, path)
    return path
