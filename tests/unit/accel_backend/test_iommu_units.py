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

"""A device and the other functions of its slot in its IOMMU group go
to a guest as one unit (``accel_backend.agent.discovery.iommu``): discovered,
reported and bound through a real Placement over the generated
``gpu-audio-group`` tree."""

import sqlalchemy as sa
import testtools

from accel_backend.agent.discovery import iommu
from accel_backend.agent.discovery import sysfs
from accel_backend.db import models
from tests.unit.accel_backend import real_servers
from tests.unit.accel_backend import test_real_servers


class TestGPUWithItsAudioFunction(test_real_servers.RealServerTest):
    """A GPU and its HDMI audio function: one IOMMU group, one unit."""

    TREE = test_real_servers.tree('gpu-audio-group')

    def test_gpu_goes_with_its_audio_function(self):
        svc = self.report()
        self.assertEqual(['0000:01:00.0', '0000:41:00.0'],
                         sorted(self.providers()))
        # Group 14's audio function on snd_hda_intel no longer blocks its
        # GPU: it goes with it (libvirt moves it to vfio-pci).
        for name in ('0000:01:00.0', '0000:41:00.0'):
            self.assertEqual((1, 0, 1), self.inv(name, 'PGPU'))
            self.assertEqual('0,1', self.attrs(svc, name)['functions'])
            self.assertEqual('enabled', self.device_view(svc, name)['status'])
        self.assertEqual(['0000:01:00.0', '0000:41:00.0'], self.candidates(
            'resources=PGPU:1&group_policy=none'))
        self.assertEqual('14', self.attrs(svc, '0000:01:00.0')['iommu_group'])
        self.writes(svc)
        svc.discover_and_report()
        self.assertEqual([], self.writes(svc))
        arq_uuid, state = self.api_bind(svc, '0000:01:00.0')
        self.assertEqual('Bound', state)
        arq = self.call(svc, '/v2/accelerator_requests/%s' % arq_uuid).json
        self.assertEqual({'domain': '0000', 'bus': '01', 'device': '00',
                          'function': '0', 'functions': '0,1'},
                         arq['attach_handle_info'])

    def test_host_endpoint_of_another_slot_still_blocks(self):
        # A NIC on the host's e1000e in group 14, in a slot of its own
        # (no ACS between them): it cannot go to the guest with the GPU.
        real_servers.st.write_function(
            self.root, '0000:02:00.0', '8086', '10d3', '020000', numa=0,
            driver='e1000e', iommu_group=14)
        svc = self.report()
        self.assertEqual((1, 1, 1), self.inv('0000:01:00.0', 'PGPU'))
        self.assertEqual(['0000:41:00.0'], self.candidates(
            'resources=PGPU:1'))
        view = self.device_view(svc, '0000:01:00.0')
        self.assertEqual('unhealthy', view['status'])
        self.assertIn('IOMMU group 14 also holds 0000:02:00.0 (driver '
                      'e1000e)', view['status_reason'])

    def test_handles_of_before_units_are_updated_when_free(self):
        # Handles written before units existed have no "functions": the
        # same handle gets it, once its guest released it.
        svc = self.report()
        arq_uuid, _ = self.api_bind(svc, '0000:01:00.0')
        uuids = self.handle_infos(svc, drop=True)
        svc.discover_and_report()
        found = self.handle_infos(svc)
        self.assertEqual(sorted(uuids), sorted(found))
        self.assertEqual({'01': None, '41': '0,1'},
                         {i['bus']: i.get('functions')
                          for i in found.values()})
        self.api_unbind(svc, arq_uuid)
        self.assertEqual(['available'],
                         list(svc.cleaner.clean_pending().values()))
        svc.discover_and_report()
        found = self.handle_infos(svc)
        self.assertEqual(sorted(uuids), sorted(found))
        self.assertEqual(['0,1', '0,1'],
                         [i.get('functions') for i in found.values()])

    def handle_infos(self, svc, drop=False):
        """``{handle uuid: attach_info}``; ``drop``: remove "functions"
        from every handle first, as the rows of an older release."""
        with svc.db.transaction() as session:
            handles = session.scalars(sa.select(models.AttachHandle)).all()
            if drop:
                for h in handles:
                    h.attach_info = {k: v for k, v in h.attach_info.items()
                                     if k != 'functions'}
            return {h.uuid: dict(h.attach_info) for h in handles}

    def attrs(self, svc, address):
        return {a['key']: a['value'] for a in self.call(
            svc, '/v2/attributes').json['attributes']
            if a['deployable_uuid'] == self.deployable_uuid(svc, address)}

    def deployable_uuid(self, svc, address):
        deps = self.call(svc, '/v2/deployables').json['deployables']
        return next(d['uuid'] for d in deps if address in d['name'])


def _fn(address, vendor, cls, driver, group='9'):
    return sysfs.PCIFunction(address=address, vendor_id=vendor,
                             product_id='0000', class_code=cls,
                             iommu_group=group, driver=driver)


class TestCompanionRule(testtools.TestCase):
    """Which functions of a slot go with a device (``Groups``)."""

    def test_chipset_functions_on_host_drivers_block(self):
        # Q35's ICH9 slot 1f, as the nested node's kernel shows it: the
        # SMBus function is never given away with the host's SATA
        # controller.
        smbus = _fn('0000:00:1f.3', '8086', '0c0500', 'i801_smbus')
        groups = iommu.Groups([_fn('0000:00:1f.0', '8086', '060100', None),
                               _fn('0000:00:1f.2', '8086', '010601', 'ahci'),
                               smbus])
        self.assertEqual(['0000:00:1f.0'],
                         [f.address for f in groups.companions(smbus)])
        self.assertIn('also holds 0000:00:1f.2 (driver ahci)',
                      groups.blocker(smbus))

    def test_a_gpus_own_functions_go_with_it(self):
        gpu = _fn('0000:01:00.0', '10de', '030000', 'vfio-pci')
        groups = iommu.Groups([
            gpu, _fn('0000:01:00.1', '10de', '040300', 'snd_hda_intel'),
            _fn('0000:01:00.2', '10de', '0c0330', 'xhci_hcd'),
            _fn('0000:01:00.3', '1b21', '0c8000', 'other')])
        self.assertEqual(['0000:01:00.1', '0000:01:00.2'],
                         [f.address for f in groups.companions(gpu)])
        self.assertIn('0000:01:00.3 (driver other)', groups.blocker(gpu))
