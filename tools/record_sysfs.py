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
"""Record a host's accelerator sysfs subtree as a test fixture, read only.

Usage (standard library only, so it runs on any host with ``python3``)::

    python3 tools/record_sysfs.py OUTPUT_DIR [--sysfs /sys] [--all]

writes ``OUTPUT_DIR/<address>/...`` in the layout of the trees under
``tests/fixtures/sysfs`` (plain files, and the ``driver``,
``iommu_group``, ``physfn`` and ``virtfn<N>`` links made relative) and
``OUTPUT_DIR/PROVENANCE.json``: the kernel release, the NVIDIA driver
version where one is loaded, the system vendor and product from DMI, the
virtualisation the host reports, what the recorder saw of the IOMMU, and
each function's real sysfs path.

Safety, the rule for any host we do not own (a customer's, a lent one):
the recorder opens only the attribute files named in ``ATTRIBUTES`` and
``NVIDIA_VGPU_ATTRIBUTES`` for reading, and the first 256 bytes of
``config``.  It never opens ``reset``, ``remove``, ``rescan``, ``rom``,
``resource*``, ``driver_override`` or ``sriov_numvfs`` for writing, never
loads or unbinds a driver, and never writes below the sysfs root.  The
existence of the write-only ``reset`` file is recorded by ``stat`` alone.

By default the functions recorded are the accelerators (PCI classes 0x03
display, 0x12 processing accelerators, 0x0b40 co-processors, 0x0680
bridges such as NVIDIA's NVSwitch), every function in their IOMMU groups
and slots, and the bridges above them; ``--all`` records every function.
"""

import argparse
import json
import os
import platform
import stat
import sys

ATTRIBUTES = (
    'vendor', 'device', 'class', 'revision', 'subsystem_vendor',
    'subsystem_device', 'numa_node', 'local_cpulist', 'reset_method',
    'current_link_speed', 'current_link_width', 'max_link_speed',
    'max_link_width', 'aer_dev_fatal', 'aer_dev_nonfatal',
    'aer_dev_correctable', 'sriov_numvfs', 'sriov_totalvfs',
    'sriov_vf_device', 'sriov_offset', 'sriov_stride',
    'sriov_drivers_autoprobe', 'enable', 'd3cold_allowed', 'power_state',
    'boot_vga', 'modalias')
MDEV_TYPE_ATTRIBUTES = ('name', 'available_instances', 'description',
                        'device_api')
NVIDIA_VGPU_ATTRIBUTES = ('creatable_vgpu_types', 'current_vgpu_type',
                          'vgpu_params', 'supported_vgpu_types')
LINKS = ('driver', 'iommu_group')
ACCELERATOR_CLASSES = ('03', '12', '0b40', '0680')
CONFIG_BYTES = 256
MAX_ATTRIBUTE_BYTES = 65536


def _read_text(path):
    """The text of one attribute file, or None where it cannot be read
    (missing, write-only, or an error the driver returns)."""
    try:
        with open(path, 'rb') as f:
            data = f.read(MAX_ATTRIBUTE_BYTES)
    except OSError:
        return None
    return data.decode('utf-8', 'replace')


def _link_name(path):
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


def _function_facts(devices, address):
    """Everything recorded of one function: a dict of attribute name ->
    text, link name -> target name, and its real path."""
    base = os.path.join(devices, address)
    facts = {'files': {}, 'links': {}, 'virtfns': {}, 'mdev_types': {},
             'real_path': os.path.realpath(base)}
    for name in ATTRIBUTES:
        text = _read_text(os.path.join(base, name))
        if text is not None:
            facts['files'][name] = text
    try:
        mode = os.stat(os.path.join(base, 'reset')).st_mode
        facts['reset_present'] = stat.S_ISREG(mode)
    except OSError:
        facts['reset_present'] = False
    try:
        with open(os.path.join(base, 'config'), 'rb') as f:
            facts['config_hex'] = f.read(CONFIG_BYTES).hex()
    except OSError:
        facts['config_hex'] = None
    for name in LINKS + ('physfn',):
        target = _link_name(os.path.join(base, name))
        if target is not None:
            facts['links'][name] = target
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        entries = []
    facts['entries'] = entries
    for name in entries:
        if name.startswith('virtfn'):
            target = _link_name(os.path.join(base, name))
            if target:
                facts['virtfns'][name] = target
    types_dir = os.path.join(base, 'mdev_supported_types')
    if os.path.isdir(types_dir):
        for type_id in sorted(os.listdir(types_dir)):
            tdir = os.path.join(types_dir, type_id)
            facts['mdev_types'][type_id] = {
                name: _read_text(os.path.join(tdir, name))
                for name in MDEV_TYPE_ATTRIBUTES}
            try:
                facts['mdev_types'][type_id]['devices'] = sorted(
                    os.listdir(os.path.join(tdir, 'devices')))
            except OSError:
                pass
    nvidia_dir = os.path.join(base, 'nvidia')
    if os.path.isdir(nvidia_dir):
        facts['nvidia'] = {
            name: _read_text(os.path.join(nvidia_dir, name))
            for name in NVIDIA_VGPU_ATTRIBUTES
            if os.path.exists(os.path.join(nvidia_dir, name))}
    return facts


def _is_accelerator(facts):
    klass = (facts['files'].get('class') or '').strip().lower()
    klass = klass[2:] if klass.startswith('0x') else klass
    return any(klass.startswith(prefix) for prefix in ACCELERATOR_CLASSES)


def _select(all_facts, everything):
    """The addresses to record: accelerators and what shares their IOMMU
    group or slot, plus every bridge on their real paths."""
    if everything:
        return set(all_facts)
    chosen = {a for a, f in all_facts.items() if _is_accelerator(f)}
    groups = {all_facts[a]['links'].get('iommu_group') for a in chosen}
    groups.discard(None)
    slots = {a.rsplit('.', 1)[0] for a in chosen}
    for address, facts in all_facts.items():
        if (facts['links'].get('iommu_group') in groups or
                address.rsplit('.', 1)[0] in slots):
            chosen.add(address)
    for address in list(chosen):
        for part in all_facts[address]['real_path'].split(os.sep):
            if part in all_facts:
                chosen.add(part)
    return chosen


def _write_tree(out, address, facts):
    base = os.path.join(out, address)
    os.makedirs(base, exist_ok=True)
    for name, text in facts['files'].items():
        with open(os.path.join(base, name), 'w') as f:
            f.write(text)
    if facts['reset_present']:
        open(os.path.join(base, 'reset'), 'w').close()
    if facts['config_hex']:
        with open(os.path.join(base, 'config'), 'wb') as f:
            f.write(bytes.fromhex(facts['config_hex']))
    links = {}
    if 'driver' in facts['links']:
        links['driver'] = '../../../bus/pci/drivers/%s' % (
            facts['links']['driver'])
    if 'iommu_group' in facts['links']:
        links['iommu_group'] = '../../../kernel/iommu_groups/%s' % (
            facts['links']['iommu_group'])
    if 'physfn' in facts['links']:
        links['physfn'] = '../%s' % facts['links']['physfn']
    for name, target in facts['virtfns'].items():
        links[name] = '../%s' % target
    for name, target in links.items():
        os.symlink(target, os.path.join(base, name))
    for type_id, attrs in facts['mdev_types'].items():
        tdir = os.path.join(base, 'mdev_supported_types', type_id)
        os.makedirs(os.path.join(tdir, 'devices'), exist_ok=True)
        for name in MDEV_TYPE_ATTRIBUTES:
            if attrs.get(name) is not None:
                with open(os.path.join(tdir, name), 'w') as f:
                    f.write(attrs[name])
    if facts.get('nvidia'):
        ndir = os.path.join(base, 'nvidia')
        os.makedirs(ndir, exist_ok=True)
        for name, text in facts['nvidia'].items():
            if text is not None:
                with open(os.path.join(ndir, name), 'w') as f:
                    f.write(text)


def _host_facts(sysfs):
    def text(path):
        value = _read_text(os.path.join(sysfs, path))
        return value.strip() if value is not None else None
    groups_dir = os.path.join(sysfs, 'kernel', 'iommu_groups')
    try:
        groups = len(os.listdir(groups_dir))
    except OSError:
        groups = None
    return {
        'kernel_release': platform.release(),
        'kernel_version': platform.version(),
        'machine': platform.machine(),
        'nvidia_driver': text('module/nvidia/version'),
        'dmi_sys_vendor': text('class/dmi/id/sys_vendor'),
        'dmi_product_name': text('class/dmi/id/product_name'),
        'hypervisor_type': text('hypervisor/type'),
        'iommu_groups': groups,
        'iommu_classes': sorted(os.listdir(
            os.path.join(sysfs, 'class', 'iommu')))
        if os.path.isdir(os.path.join(sysfs, 'class', 'iommu')) else None,
    }


def record(sysfs, out, everything=False):
    """Record the selected functions of ``<sysfs>/bus/pci/devices`` into
    the directory ``out``; returns the provenance dict that is also
    written to ``out/PROVENANCE.json``.  Raises OSError where ``out``
    cannot be written."""
    devices = os.path.join(sysfs, 'bus', 'pci', 'devices')
    try:
        addresses = sorted(os.listdir(devices))
    except OSError:
        addresses = []
    all_facts = {a: _function_facts(devices, a) for a in addresses}
    chosen = sorted(_select(all_facts, everything))
    os.makedirs(out, exist_ok=True)
    for address in chosen:
        _write_tree(out, address, all_facts[address])
    provenance = {
        'recorded_by': 'tools/record_sysfs.py',
        'host': _host_facts(sysfs),
        'functions_seen': addresses,
        'functions_recorded': {
            a: {'real_path': all_facts[a]['real_path'],
                'entries': all_facts[a]['entries'],
                'reset_present': all_facts[a]['reset_present'],
                'nvidia': all_facts[a].get('nvidia')}
            for a in chosen},
    }
    with open(os.path.join(out, 'PROVENANCE.json'), 'w') as f:
        json.dump(provenance, f, indent=1, sort_keys=True)
        f.write('\n')
    return provenance


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('output')
    parser.add_argument('--sysfs', default='/sys')
    parser.add_argument('--all', action='store_true')
    args = parser.parse_args(argv)
    provenance = record(args.sysfs, args.output, args.all)
    print(json.dumps(provenance['host'], sort_keys=True))
    print('%d functions seen, %d recorded' % (
        len(provenance['functions_seen']),
        len(provenance['functions_recorded'])))
    return 0


if __name__ == '__main__':
    sys.exit(main())
