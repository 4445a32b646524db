"""End to end: boot a server with an accelerator, delete it (issue 2)."""

from lxml import etree

from tests.functional import base


def hostdev_addresses(xml):
    """PCI addresses ``DDDD:BB:SS.F`` of the guest's PCI hostdevs."""
    out = []
    for addr in etree.fromstring(xml).findall(
            './devices/hostdev[@type="pci"]/source/address'):
        out.append('%04x:%02x:%02x.%x' % tuple(
            int(addr.get(k), 16) for k in ('domain', 'bus', 'slot',
                                            'function')))
    return out


class BootWithAcceleratorTest(base.AccelServersTestBase):

    def test_boot_and_delete(self):
        rps = self.device_rps()
        self.assertEqual(['0000:af:00.0', '0000:d8:00.0'], sorted(rps))
        self.create_device_profile('gpu', [{'resources:PGPU': '1',
                                            'trait:CUSTOM_NVIDIA_T4':
                                                'required'}])
        flavor = self.accel_flavor('gpu')

        server = self._create_server(flavor_id=flavor, networks='none')

        # The guest got exactly one of the discovered GPUs ...
        addresses = hostdev_addresses(self.guest_xml(server['id']))
        self.assertEqual(1, len(addresses))
        address = addresses[0]
        self.assertIn(address, rps)
        # ... the allocation is on that GPU's resource provider ...
        allocs = self.placement.get(
            '/allocations/%s' % server['id']).body['allocations']
        self.assertEqual({'PGPU': 1}, allocs[rps[address]]['resources'])
        # ... and accel_backend shows the ARQ bound to it.
        arqs = self.arqs_of(server['id'])
        self.assertEqual(1, len(arqs))
        arq = arqs[0]
        self.assertEqual('Bound', arq['state'])
        self.assertEqual(server['id'], arq['instance_uuid'])
        self.assertEqual(self.COMPUTE, arq['hostname'])
        self.assertEqual(rps[address], arq['device_rp_uuid'])
        self.assertEqual('PCI', arq['attach_handle_type'])

        self._delete_server(server)

        self.assertEqual([], self.arqs_of(server['id']))
        allocs = self.placement.get(
            '/allocations/%s' % server['id']).body['allocations']
        self.assertEqual({}, allocs)
        usages = self.placement.get(
            '/resource_providers/%s/usages' % rps[address]).body['usages']
        self.assertEqual({'PGPU': 0}, usages)
