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

"""The L1 compute node: a QEMU (TCG) guest with a virtual IOMMU and
emulated PCI functions standing in for accelerators, whose root is this
machine's ``/`` (read-only over 9p, tmpfs overlay), so it runs this
checkout and its venvs as they are.

One ``NestedNode.run(script)`` boots L1, runs ``script`` (shell) there as
root after stage 2 (hostname ``compute-l1``, ``/lib/modules`` of the L1
kernel, ``/proc``, ``/sys``, ``/dev``; ``/tmp`` is the machine's, like
the rest of the root, so a checkout under ``/tmp`` works), collects its
output and exit status through a shared directory, and powers L1 off.
QEMU is always stopped: on return, on error and on Ctrl-C.

Facts this relies on (QEMU 7.2 and Linux 6.1 from Debian 12): ``-accel
tcg`` (this machine's ``/dev/kvm`` cannot boot a stock kernel), ``q35``
with ``kernel-irqchip=split`` and ``intel-iommu,intremap=on,
caching-mode=on`` plus ``intel_iommu=on`` give every function a real
IOMMU group; QEMU's ``edu`` device (``1234:11e8``, class ``00ff``) is a
PCI function vfio-pci can take.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time

from tools.nested import image

QEMU = 'qemu-system-x86_64'
STAGE2 = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'stage2.sh')
EDU = ('1234', '11e8')
#: What L1's init prints on its console once the kernel handed over to it
#: (stage 1 of ``image.initramfs``).
INIT_RAN = 'nested: stage 1 done'
#: Seconds L1's kernel gets to reach its init: about 10 s on 2 idle
#: cores.  Once (of about 30 boots in CI runs of 2026-11-25) QEMU/TCG
#: stopped the kernel for good 1.6 s into its own boot ("hpet0: at MMIO
#: ..." the last line), before any code of ours ran.
BOOT_TIMEOUT = 240
#: Boots tried when the kernel stops before its init runs.
BOOT_TRIES = 2


class Layout:
    """Which PCI functions L1 has (QEMU ``-device`` arguments).

    The default stands in for a two-socket accelerator server:

    * ``0000:00:04.0`` and ``0000:00:05.0``: ``edu`` functions on the root
      bus, NUMA node 0, an IOMMU group each;
    * ``0000:02:01.0`` and ``0000:02:02.0``: two ``edu`` behind a
      PCIe-to-PCI bridge (conventional PCI has no ACS): one IOMMU group
      with the bridge;
    * ``0000:81:00.0``: an ``edu`` behind a root port of a ``pxb-pcie``
      expander bus on NUMA node 1;
    * ``0000:00:08.0`` and ``0000:00:08.1``: two ``edu`` functions of one
      slot on the root bus (a multi-function device without ACS: the
      kernel puts both in one IOMMU group), a GPU and its audio function
      stand-in.

    Plus the virtio 9p functions of the shared directories.

    :ivar numa_nodes: NUMA nodes of L1 (int).
    :ivar devices: list of ``-device`` argument strings.
    """

    def __init__(self, devices=None, numa_nodes=2):
        self.numa_nodes = numa_nodes
        self.devices = devices if devices is not None else [
            'edu,addr=04.0', 'edu,addr=05.0',
            'pcie-root-port,id=rp1,chassis=1,addr=06.0',
            'pcie-pci-bridge,id=br1,bus=rp1',
            'edu,bus=br1,addr=01.0', 'edu,bus=br1,addr=02.0',
            'pxb-pcie,id=pxb1,bus_nr=128,numa_node=1,addr=07.0',
            'pcie-root-port,id=rp2,chassis=2,bus=pxb1',
            'edu,bus=rp2',
            # On the root bus by name: after a pxb-pcie, QEMU would plug
            # a device without ``bus=`` into the expander bus.
            'edu,bus=pcie.0,addr=08.0,multifunction=on',
            'edu,bus=pcie.0,addr=08.1']

    #: Addresses of the default layout, for tests.
    ROOT_EDUS = ('0000:00:04.0', '0000:00:05.0')
    BRIDGED_EDUS = ('0000:02:01.0', '0000:02:02.0')
    NUMA1_EDU = '0000:81:00.0'
    UNIT_EDUS = ('0000:00:08.0', '0000:00:08.1')


class NestedError(RuntimeError):
    """L1 could not be started or did not finish; the message says why
    (with the end of its console)."""


def _mem_available_mb():
    with open('/proc/meminfo') as f:
        for line in f:
            if line.startswith('MemAvailable:'):
                return int(line.split()[1]) // 1024
    return 0


class NestedNode:
    """Boots L1 for one script at a time.

    :param layout: ``Layout`` (default: ``Layout()``).
    :param memory_mb: L1's memory (MiB); refused with a clear error when
        the machine has not that much available plus 512 MiB.
    :param cpus: L1's vCPUs.
    :param log: callable(str) for progress lines.
    :param host_forwards: TCP ports (ints) of L1 that the machine reaches
        on its own ``127.0.0.1`` (QEMU ``hostfwd``; the service in L1
        must listen on ``0.0.0.0`` or ``10.0.2.15``).
    :param iommu: give L1 QEMU's virtual Intel IOMMU with interrupt
        remapping (``intel_iommu=on``); without it L1's kernel has no
        IOMMU groups, as a host whose firmware leaves VT-d off.
    """

    def __init__(self, layout=None, memory_mb=3072, cpus=2, log=print,
                 host_forwards=(), iommu=True):
        self.layout = layout or Layout()
        self.iommu = iommu
        self.memory_mb = memory_mb
        self.cpus = cpus
        self.log = log
        self.host_forwards = list(host_forwards)

    def _smp(self):
        """``-smp``: one socket per NUMA node when the vCPUs divide
        evenly.  QEMU 7.2 otherwise puts every vCPU in one socket and
        that socket's node, leaving the other nodes without CPUs (Nova
        then fits no guest cell there)."""
        nodes = self.layout.numa_nodes
        if nodes > 1 and self.cpus % nodes == 0:
            return '%d,sockets=%d,cores=%d,threads=1' % (
                self.cpus, nodes, self.cpus // nodes)
        return str(self.cpus)

    def _node_cpus(self, node):
        """``,cpus=A-B`` of NUMA node ``node`` (the vCPUs of its
        socket), or '' when ``_smp`` could not split them."""
        nodes = self.layout.numa_nodes
        if nodes < 2 or self.cpus % nodes:
            return ''
        per = self.cpus // nodes
        return ',cpus=%d-%d' % (node * per, node * per + per - 1)

    def _iommu_cmdline(self):
        """L1's kernel parameters for its IOMMU: none without one."""
        return ['intel_iommu=on', 'iommu=pt'] if self.iommu else []

    def _check(self):
        if shutil.which(QEMU) is None:
            raise NestedError('%s not found: install the Debian package '
                              'qemu-system-x86 (bindep.txt, profile nested)'
                              % QEMU)
        if _mem_available_mb() < self.memory_mb + 512:
            raise NestedError('L1 needs %d MiB and only %d MiB are '
                              'available' % (self.memory_mb + 512,
                                             _mem_available_mb()))

    def argv(self, vmlinuz, initrd, out, modules_root):
        """The QEMU command line (list of str)."""
        # ``la57=off``: 4-level page tables.  With TCG's ``max`` L1's
        # kernel would take 5 levels, one more step of every TLB fill QEMU
        # emulates (Python in L1 imported Nova's compute driver in 52 s
        # instead of 58 s, once each on the same machine).
        argv = [QEMU, '-accel', 'tcg', '-machine',
                'q35,kernel-irqchip=split', '-cpu', 'max,la57=off',
                '-smp', self._smp(), '-m', str(self.memory_mb),
                '-nodefaults', '-display', 'none', '-no-reboot',
                '-monitor', 'none',
                '-serial', 'file:%s' % os.path.join(out, 'console.log')]
        if self.iommu:
            # Before any PCI device, whose DMA address space it sets.
            argv += ['-device', 'intel-iommu,intremap=on,caching-mode=on']
        argv += [
            '-kernel', vmlinuz, '-initrd', initrd, '-append',
            ' '.join(['console=ttyS0'] + self._iommu_cmdline() + [
                'panic=-1', 'stage2=%s' % STAGE2, 'nested_out=%s' % out,
                'nested_modules=%s' % modules_root]),
            '-virtfs', 'local,path=/,mount_tag=hostroot,'
            'security_model=none,readonly=on,multidevs=remap',
            '-virtfs', 'local,path=%s,mount_tag=out,'
            'security_model=none' % out,
            # User-mode network: L1 reaches the machine's loopback
            # services at 10.0.2.2 and nothing else.
            '-netdev', ''.join(['user,id=net0'] + [
                ',hostfwd=tcp:127.0.0.1:%d-:%d' % (port, port)
                for port in self.host_forwards]),
            '-device', 'virtio-net-pci,netdev=net0,addr=0a.0']
        share = self.memory_mb // self.layout.numa_nodes
        for node in range(self.layout.numa_nodes):
            argv += ['-object', 'memory-backend-ram,id=m%d,size=%dM' % (
                node, share),
                '-numa', 'node,nodeid=%d,memdev=m%d%s' % (
                    node, node, self._node_cpus(node))]
        for dev in self.layout.devices:
            argv += ['-device', dev]
        return argv

    def run(self, script, timeout=900):
        """Boot L1, run ``script`` there, power it off.

        :param script: shell script text, run by ``/bin/sh`` as root in
            L1; its working directory is the shared output directory.
        :param timeout: seconds for the whole round trip.
        :returns: ``(exit status, output text, seconds)``.
        :raises NestedError: QEMU missing, not enough memory, L1 did not
            come up or did not finish in time.
        """
        for attempt in range(1, BOOT_TRIES + 1):
            with tempfile.TemporaryDirectory(prefix='nested-') as out:
                start = time.monotonic()
                proc = self.start(script, out)
                try:
                    if not self.wait_for_init(
                            proc, out, min(BOOT_TIMEOUT, timeout),
                            attempt):
                        continue
                    qemu_out, _ = proc.communicate(timeout=max(
                        1.0, timeout - (time.monotonic() - start)))
                except NestedError:
                    raise
                except BaseException:
                    # Timeout, Ctrl-C or anything else: L1 never outlives
                    # us.
                    kill(proc)
                    raise NestedError(
                        'L1 did not finish within %d s; console ends '
                        'with:\n%s' % (timeout, _tail(out, 'console.log')))
                took = time.monotonic() - start
                rc = job_status(out, proc, qemu_out)
                self.log('nested: L1 ran the script in %.0f s' % took)
                return rc, _read(out, 'job.out'), took

    def wait_for_init(self, proc, out, timeout, attempt):
        """Wait until L1's init ran (``INIT_RAN`` on its console) or its
        QEMU exited (the caller finds out why).

        :param attempt: this boot's number (1..``BOOT_TRIES``).
        :returns: True; False when the kernel did not reach its init in
            ``timeout`` seconds and another boot is to be tried (QEMU is
            killed).
        :raises NestedError: the same on the last boot (QEMU killed).
        """
        end = time.monotonic() + timeout
        while proc.poll() is None and not reached_init(out):
            if time.monotonic() > end:
                kill(proc)
                tail = _tail(out, 'console.log')
                if attempt >= BOOT_TRIES:
                    raise NestedError(
                        'L1\'s kernel did not reach its init within %d s, '
                        'in %d boots; console ends with:\n%s' % (
                            timeout, attempt, tail))
                self.log('nested: L1\'s kernel did not reach its init '
                         'within %d s; booting it again. Console ends '
                         'with:\n%s' % (timeout, tail))
                return False
            time.sleep(0.5)
        return True

    def start(self, script, out, stdout=subprocess.PIPE):
        """Boot L1 in the background to run ``script`` (see ``run``).

        :param out: directory shared with L1 (``job.sh``, ``job.out``,
            ``job.rc``; ``console.log`` is L1's serial console).
        :param stdout: where QEMU's own output goes (``Popen`` argument).
        :returns: the QEMU ``subprocess.Popen`` (its own session).  The
            caller stops it (``kill``) when done.
        :raises NestedError: QEMU missing or not enough memory.
        """
        self._check()
        vmlinuz, modules_root, version = image.kernel(log=self.log)
        initrd = image.initramfs(modules_root, version, log=self.log)
        with open(os.path.join(out, 'job.sh'), 'w') as f:
            f.write(script)
        self.log('nested: booting L1 (TCG, %d vCPUs, %d MiB)' % (
            self.cpus, self.memory_mb))
        return subprocess.Popen(
            self.argv(vmlinuz, initrd, out, modules_root),
            stdout=stdout, stderr=subprocess.STDOUT,
            start_new_session=True)


def reached_init(out):
    """Whether the L1 sharing directory ``out`` ran its init
    (``INIT_RAN`` on its console)."""
    return INIT_RAN in _read(out, 'console.log')


def kill(proc):
    """Stop the QEMU of ``proc`` (and its process group) at once."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def job_status(out, proc, qemu_out=b''):
    """The job's exit status once QEMU has exited.

    :raises NestedError: L1 stopped before the job wrote its status.
    """
    rc_path = os.path.join(out, 'job.rc')
    if not os.path.exists(rc_path):
        raise NestedError(
            'L1 stopped before the script finished (QEMU status %s: %s); '
            'console ends with:\n%s' % (
                proc.returncode, (qemu_out or b'').decode(
                    errors='replace').strip()[-500:],
                _tail(out, 'console.log')))
    with open(rc_path) as f:
        return int(f.read().strip() or 255)


def _read(out, name):
    try:
        with open(os.path.join(out, name), errors='replace') as f:
            return f.read()
    except OSError:
        return ''


def _tail(out, name, lines=30):
    return '\n'.join(_read(out, name).splitlines()[-lines:])
