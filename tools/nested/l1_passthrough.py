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

"""Inside L1: give one PCI function to a guest (L2) through libvirt with
the ``<hostdev>`` nova_accel composes from an attach handle, watch what
the kernel and the guest see, then release and reset the function as
accel_backend's cleaner does.  Prints one JSON document.

    python -m tools.nested.l1_passthrough --address 0000:00:04.0 \\
        [--unit 0000:00:05.0] --kernel VMLINUZ --initrd GUEST_INITRAMFS

``--unit``: a function given with the other functions of its slot in its
IOMMU group (discovered from L1's own groups, as accel_backend does),
composed into one guest slot as ``accel.LibvirtDriver`` does.

Runs libvirtd (QEMU driver, TCG) as ``tools.nested.libvirtd`` starts it.
"""

import argparse
import json
import os
import sys
import time

from tools.nested import libvirtd


def domain_xml(name, kernel, initrd, console, hostdev):
    """A minimal TCG guest booting ``kernel``/``initrd`` with its serial
    console in the file ``console`` and the ``<hostdev>`` string."""
    return '''<domain type='qemu'>
  <name>%(name)s</name>
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>%(kernel)s</kernel>
    <initrd>%(initrd)s</initrd>
    <cmdline>console=ttyS0 panic=-1 quiet</cmdline>
  </os>
  <on_poweroff>destroy</on_poweroff>
  <on_crash>destroy</on_crash>
  <devices>
    <serial type='file'><source path='%(console)s'/></serial>
    <console type='file'><source path='%(console)s'/></console>
    %(hostdev)s
  </devices>
</domain>''' % dict(name=name, kernel=kernel, initrd=initrd,
                    console=console, hostdev=hostdev)


def _unit(address):
    """The hostdev elements and controllers of the unit of ``address``,
    from L1's real IOMMU groups, as discovery and the driver build it."""
    import types

    from accel_backend.discovery import iommu
    from accel_backend.discovery import sysfs
    from nova_accel.virt import hostdev
    from nova_accel.virt.libvirt import slots

    found = sysfs.scan('/sys/bus/pci/devices')
    fn = next(f for f in found if f.address == address)
    companions = iommu.Groups(found).companions(fn)
    info = dict(fn.address_parts)
    info[iommu.FUNCTIONS_KEY] = ','.join(sorted(
        f.address.rsplit('.', 1)[1] for f in [fn] + companions))
    unit = hostdev.compose_unit({'uuid': 'l1-unit',
                                 'attach_handle_type': 'PCI',
                                 'attach_handle_info': info})
    guest = types.SimpleNamespace(os_mach_type='q35', devices=[])
    ctrls = slots.place(guest, [unit])
    return info, [c.format_dom() for c in ctrls] + unit


def _driver(address):
    link = '/sys/bus/pci/devices/%s/driver' % address
    return os.path.basename(os.readlink(link)) if os.path.islink(link) \
        else None


def main(argv=None):
    """:returns: exit status (int)."""
    parser = argparse.ArgumentParser()
    parser.add_argument('--address', required=True)
    parser.add_argument('--unit')
    parser.add_argument('--kernel', required=True)
    parser.add_argument('--initrd', required=True)
    parser.add_argument('--timeout', type=int, default=600)
    args = parser.parse_args(argv)

    import libvirt

    from accel_backend.discovery import sysfs
    from nova_accel.virt import hostdev

    result = {'driver_before': _driver(args.address)}
    fn = sysfs.read_function('/sys/bus/pci/devices', args.address)
    arq = {'uuid': 'l1-test', 'attach_handle_type': 'PCI',
           'attach_handle_info': fn.address_parts}
    element = hostdev.to_string(hostdev.compose_hostdev(arq))
    unit = []
    if args.unit:
        result['unit_info'], elems = _unit(args.unit)
        unit = ['%s.%s' % (args.unit[:-2], f) for f in
                result['unit_info']['functions'].split(',')]
        result['unit_before'] = [_driver(a) for a in unit]
        element += ''.join(hostdev.to_string(e) for e in elems)
    libvirtd.start()
    conn = libvirt.open('qemu:///system')
    console = '/tmp/l2-console.log'
    dom = conn.defineXML(domain_xml('l2', args.kernel, args.initrd,
                                    console, element))
    start = time.monotonic()
    dom.create()
    result['driver_while_running'] = _driver(args.address)
    result['unit_while_running'] = [_driver(a) for a in unit]
    result['dumpxml'] = dom.XMLDesc(0)
    text = ''
    while time.monotonic() - start < args.timeout:
        try:
            with open(console, errors='replace') as f:
                text = f.read()
        except OSError:
            text = ''
        if 'guest: done' in text:
            break
        time.sleep(2)
    result['guest_seconds'] = round(time.monotonic() - start, 1)
    result['guest_console'] = text
    if dom.isActive():
        dom.destroy()
    dom.undefine()
    conn.close()
    result['driver_after'] = _driver(args.address)
    result['unit_after'] = [_driver(a) for a in unit]
    result['reset_offered'] = os.path.exists(
        '/sys/bus/pci/devices/%s/reset' % args.address)
    if result['reset_offered']:
        try:
            sysfs.reset_function('/sys/bus/pci/devices', args.address)
            result['reset'] = 'ok'
        except OSError as e:
            result['reset'] = str(e)
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
