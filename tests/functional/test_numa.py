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

"""Accelerators on the guest NUMA node of their host device (issue "nova_accel
in Nova", part 3).

Host: fake libvirt with 2 NUMA nodes (Nova's harness default) and the
``two-gpus`` sysfs tree, whose two T4 sit on host NUMA node 1; fake
libvirt's node devices ``pci_0000_af_00_0`` and ``pci_0000_d8_00_0``
say the same (``<numa node='1'/>``), which is where our driver reads the
device's node (accel_backend's attach handles carry only the address).

Flavor ``hw:numa_nodes=2``: Nova places guest cell 0 on host node 0 and
cell 1 on host node 1 (``<numatune><memnode cellid=.. nodeset=..>``).
The guest XML Nova defines must put the GPU on a ``pci-expander-bus``
(Nova's default x86_64 machine type is ``pc``) attached to the guest cell
on host node 1.  Fake libvirt's ``XMLDesc`` rebuilds the XML from a few
parsed fields and drops controllers and guest addresses, so the test
reads the XML Nova handed to ``defineXML``.
"""

import os
import shutil
import subprocess

import fixtures
from lxml import etree

from nova.tests.fixtures import libvirt as fakelibvirt

from tests.functional import base


class NumaAffinityTest(base.AccelServersTestBase):

    def setUp(self):
        self.defined = {}
        real_define = fakelibvirt.Connection.defineXML

        def define_xml(conn, xml):
            doc = etree.fromstring(xml)
            self.defined[doc.findtext('uuid')] = doc
            return real_define(conn, xml)

        self.useFixture(fixtures.MonkeyPatch(
            'nova.tests.fixtures.libvirt.Connection.defineXML', define_xml))
        super().setUp()
        self.rps = self.device_rps()
        self.create_device_profile('gpu', [{'resources:PGPU': '1'}])

    def start_compute(self, hostname='compute1', **kwargs):
        pci_info = fakelibvirt.HostPCIDevicesInfo(num_pci=0, num_pfs=0,
                                                  num_vfs=0)
        for bus in (0xaf, 0xd8):
            pci_info.add_device(dev_type='PCI', bus=bus, slot=0, function=0,
                                iommu_group=bus, numa_node=1,
                                vend_id='10de', prod_id='1eb8')
        return super().start_compute(hostname=hostname, pci_info=pci_info,
                                     **kwargs)

    def assert_valid_domain(self, doc):
        """libvirt's RNG schema accepts the whole guest XML Nova defined
        (``virt-xml-validate``, from libvirt-clients: bindep.txt installs
        it; a failure without it)."""
        program = shutil.which('virt-xml-validate')
        self.assertIsNotNone(program, 'virt-xml-validate not installed '
                             '(bindep.txt: libvirt-clients, libxml2-utils)')
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'domain.xml')
        with open(path, 'wb') as f:
            f.write(etree.tostring(doc))
        proc = subprocess.run([program, path, 'domain'],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)

    def _boot(self, extra_spec):
        flavor = self._create_flavor(extra_spec=dict(
            extra_spec, **{'accel:device_profile': 'gpu'}))
        server = self._create_server(flavor_id=flavor, networks='none')
        (arq,) = self.arqs_of(server['id'])
        self.assertEqual('Bound', arq['state'])
        return server, arq, self.defined[server['id']]

    def test_gpu_on_the_guest_cell_of_its_host_node(self):
        server, arq, doc = self._boot({'hw:numa_nodes': '2'})

        cell_on_host = {int(m.get('nodeset')): int(m.get('cellid'))
                        for m in doc.findall('./numatune/memnode')}
        self.assertEqual({0, 1}, set(cell_on_host))
        self.assertEqual(2, len(doc.findall('./cpu/numa/cell')))
        want_cell = cell_on_host[1]

        (expander,) = doc.findall(
            './devices/controller[@model="pci-expander-bus"]')
        self.assertEqual(str(want_cell), expander.findtext('./target/node'))
        (hd,) = doc.findall('./devices/hostdev')
        source = hd.find('./source/address')
        info = arq['attach_handle_info']
        self.assertEqual(('0x%s' % info['bus'], '0x00'),
                         (source.get('bus'), source.get('slot')))
        self.assertEqual(
            int(expander.get('index')),
            int(hd.find('./address').get('bus'), 16))
        self.assertEqual('0x00', hd.find('./address').get('slot'))
        self.assert_valid_domain(doc)
        allocs = self.placement.get(
            '/allocations/%s' % server['id']).body['allocations']
        self.assertEqual({'PGPU': 1},
                         allocs[arq['device_rp_uuid']]['resources'])

        # A hard reboot rebuilds the XML: same placement.
        self.defined.clear()
        self._reboot_server(server, hard=True)
        doc = self.defined[server['id']]
        self.assertEqual(str(want_cell), doc.findtext(
            './devices/controller[@model="pci-expander-bus"]/target/node'))

    def test_guest_without_numa_topology(self):
        _server, _arq, doc = self._boot({})
        self.assertIsNone(doc.find('./numatune'))
        self.assertEqual([], doc.findall('./devices/controller[@model='
                                         '"pci-expander-bus"]'))
        self.assertIsNone(doc.find('./devices/hostdev/address'))

    def test_q35_guest(self):
        self.flags(hw_machine_type=['x86_64=q35'], group='libvirt')
        _server, _arq, doc = self._boot({'hw:numa_nodes': '2'})
        cell_on_host = {int(m.get('nodeset')): int(m.get('cellid'))
                        for m in doc.findall('./numatune/memnode')}
        (expander,) = doc.findall(
            './devices/controller[@model="pcie-expander-bus"]')
        self.assertEqual(str(cell_on_host[1]),
                         expander.findtext('./target/node'))
        port = [c for c in doc.findall(
            './devices/controller[@model="pcie-root-port"]')
            if c.find('address') is not None and
            int(c.find('address').get('bus'), 16) ==
            int(expander.get('index'))]
        self.assertEqual(1, len(port))
        (hd,) = doc.findall('./devices/hostdev')
        self.assertEqual(int(port[0].get('index')),
                         int(hd.find('./address').get('bus'), 16))
        self.assert_valid_domain(doc)
