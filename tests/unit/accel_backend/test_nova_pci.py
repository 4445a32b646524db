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

"""Nova's ``[pci] device_spec`` on the compute node: what it selects is
left to Nova, read by Nova's own parser where Nova is installed and by
accel_backend's where it is not; a value that does not parse fails closed
and says so."""

import json
import os
import sys
from unittest import mock

import fixtures
import testtools

from accel_backend.agent.discovery import drivers
from accel_backend.agent.discovery import nova_pci
from accel_backend.agent.discovery import sysfs
from accel_backend import exception
from tests.unit.accel_backend import base

A100S = ['0000:17:00.0', '0000:65:00.0', '0000:ca:00.0', '0000:e3:00.0']


def load(test, name, root, specs=(), **groups):
    conf = base.make_conf(test, root, specs, **groups)
    (drv,) = drivers.load(conf, [name])
    return drv


def without_nova(test):
    """Make ``import nova`` fail for the rest of ``test``, as on a host
    where Nova is not installed."""
    nova_pci.nova_devspec.cache_clear()
    test.addCleanup(nova_pci.nova_devspec.cache_clear)
    patcher = mock.patch.dict(sys.modules, {'nova': None})
    patcher.start()
    test.addCleanup(patcher.stop)


def claimed(texts, root=base.GPU_SERVER):
    """Addresses under ``root`` that the specs ``texts`` leave to Nova,
    and the problems they report."""
    claims = nova_pci.NovaClaims(nova_pci.parse(texts))
    return ([fn.address for fn in sysfs.scan(root)
             if claims.claimed_by(fn)], claims.problems)


class TestNovaPCICoexistence(testtools.TestCase):
    """Drivers leave to Nova what its ``[pci] device_spec`` selects, read
    by Nova's own parser (``nova.pci.devspec``)."""

    SPEC_CLASS = nova_pci.NovaSpec

    def setUp(self):
        super().setUp()
        # Nova's parser: it must be importable here (never skipped).
        self.assertIsInstance(nova_pci.parse(['{"vendor_id": "10de"}'])[0],
                              self.SPEC_CLASS)
        self.logger = self.useFixture(fixtures.FakeLogger(
            name='accel_backend.agent.discovery.nova_pci'))

    def addresses(self, name='nvidia_gpu', root=base.GPU_SERVER, **disc):
        return [d.address for d in load(self, name, root,
                                        discovery=disc).discover()]

    def test_vendor_product_spec_claims_all(self):
        spec = '{"vendor_id": "10de", "product_id": "20b5"}'
        self.assertEqual([], self.addresses(nova_pci_device_spec=[spec]))
        for addr in A100S:
            self.assertIn(addr, self.logger.output)
        self.assertIn("Nova's [pci] device_spec %s;" % spec,
                      self.logger.output)
        # VFs, which the driver skips anyway, are not warned about.
        self.assertNotIn('0000:17:00.4', self.logger.output)

    def test_string_address_glob(self):
        spec = json.dumps({'vendor_id': '10de', 'address': '*:ca:00.*'})
        self.assertEqual(['0000:17:00.0', '0000:65:00.0', '0000:e3:00.0'],
                         self.addresses(nova_pci_device_spec=[spec]))
        self.assertIn('Device 0000:ca:00.0 (10de:20b5) is claimed by '
                      'Nova', self.logger.output)
        self.assertNotIn('0000:17:00.0', self.logger.output)

    def test_partial_string_address(self):
        # ":e3:" = any domain, bus e3, any slot and function.
        spec = json.dumps({'address': ':e3:'})
        self.assertEqual(A100S[:3],
                         self.addresses(nova_pci_device_spec=[spec]))

    def test_dict_address_with_regex(self):
        spec = json.dumps({'vendor_id': '10de', 'address': {
            'domain': '0000', 'bus': '[6c]5|ca', 'slot': '00',
            'function': '[0-7]'}})
        self.assertEqual(['0000:17:00.0', '0000:e3:00.0'],
                         self.addresses(nova_pci_device_spec=[spec]))

    def test_pf_address_claims_its_vfs(self):
        spec = json.dumps({'address': '0000:81:00.0'})
        self.assertEqual((['0000:81:00.0', '0000:81:00.4', '0000:81:00.5'],
                          []), claimed([spec], base.SRIOV_GPU))

    def test_list_value_and_devname_ignored(self):
        # A netdev no host has (Nova resolves devname on the host).
        spec = json.dumps([{'devname': 'nosuchnic9'},
                           {'vendor_id': '10ee', 'product_id': '5005'}])
        self.assertEqual(['0000:3b:00.0', '0000:86:00.0'],
                         self.addresses('fpga', base.FPGA_CARD,
                                        nova_pci_device_spec=[spec],
                                        fpga_management_functions='true'))

    def test_nova_conf_file(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\ncompute_driver = libvirt.LibvirtDriver\n'
                    '[pci]\n'
                    'device_spec = {"vendor_id": "10de", '
                    '"product_id": "1eb8", "address": "0000:af:00.0"}\n'
                    'device_spec = {"vendor_id": "8086", '
                    '"product_id": "1572", "physical_network": "phys"}\n')
        conf = base.make_conf(self, discovery={'nova_config_file': path})
        from accel_backend.agent.discovery.drivers import generic_pci
        found = generic_pci.GenericPCIDriver(conf).discover()
        self.assertEqual(['0000:d8:00.0'], [d.address for d in found])
        self.assertIn('0000:af:00.0', self.logger.output)
        self.assertIn('"address": "0000:af:00.0"', self.logger.output)

    def test_old_passthrough_whitelist_name(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write('[pci]\npassthrough_whitelist = '
                    '{"vendor_id": "10de", "product_id": "1eb8"}\n')
        self.assertEqual(1, len(nova_pci.read_nova_conf(path)))

    def test_warned_once_per_device(self):
        spec = json.dumps({'vendor_id': '10de'})
        drv = load(self, 'nvidia_gpu', base.GPU_SERVER,
                   discovery={'nova_pci_device_spec': [spec]})
        drv.discover()
        drv.discover()
        self.assertEqual(1, self.logger.output.count('0000:17:00.0'))

    def test_unparsable_nova_spec_fails_closed(self):
        # What Nova would refuse to start with still claims the ids it
        # names: the A100s are left to Nova, not offered twice.
        for spec in ('{"vendor_id": "10de", "product_id": "20b5", '
                     '"address": "1:2:3:4"}',
                     '{"vendor_id": "10de", "product_id": "20b5",'):
            self.assertEqual([], self.addresses(nova_pci_device_spec=[spec]))
            self.assertIn('Cannot parse Nova [pci] device_spec',
                          self.logger.output)
            self.assertIn('every device 10de:20b5 is left to Nova',
                          self.logger.output)
        # A vendor alone claims every device of the vendor.
        self.assertEqual([], self.addresses(nova_pci_device_spec=[
            '{"vendor_id": "10de", "address": {"bus": "("}}']))

    def test_spec_naming_no_vendor_stops_the_drivers(self):
        for spec in ('{"vendor_id": "zz"}', 'not json',
                     '{"address": "1:2:3:4"}'):
            err = self.assertRaises(
                exception.NovaPCIConfigUnusable, load, self, 'nvidia_gpu',
                base.GPU_SERVER, discovery={'nova_pci_device_spec': [spec]})
            self.assertIn('names no vendor_id', str(err))

    def test_unreadable_nova_conf_stops_the_drivers(self):
        missing = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'nova.conf')
        err = self.assertRaises(
            exception.NovaPCIConfigUnusable, load, self, 'generic_pci',
            base.TWO_GPUS, (base.T4_SPEC,),
            discovery={'nova_config_file': missing})
        self.assertIn(missing, str(err))
        with open(missing, 'w') as f:
            f.write('[pci\ndevice_spec = {}\n')  # not ini
        self.assertRaises(
            exception.NovaPCIConfigUnusable, load, self, 'generic_pci',
            base.TWO_GPUS, (base.T4_SPEC,),
            discovery={'nova_config_file': missing})

    def test_unclaimed_devices_not_warned(self):
        spec = json.dumps({'vendor_id': '15b3'})
        self.assertEqual(A100S, self.addresses(nova_pci_device_spec=[spec]))
        self.assertEqual('', self.logger.output)


class TestWithoutNova(TestNovaPCICoexistence):
    """The same, where Nova is not installed: accel_backend's parser."""

    SPEC_CLASS = nova_pci.OwnSpec

    def setUp(self):
        without_nova(self)
        super().setUp()


class TestReadAsNovaReadsIt(testtools.TestCase):
    """Where accel_backend's old parser and Nova's disagreed, Nova's
    reading wins, with Nova installed or not."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())

    def both(self, texts):
        """``claimed(texts)`` with Nova's parser, checked to be what
        accel_backend's own finds (the problems' wording differs)."""
        with_nova = claimed(texts)
        without_nova(self)
        found, problems = claimed(texts)
        self.assertEqual((with_nova[0], len(with_nova[1])),
                         (found, len(problems)))
        return with_nova

    def test_regex_field_matches_from_its_start(self):
        # Nova: re.match, so "6" is bus 60-6f (an exact 0x06 left the A100
        # on bus 65 to be offered twice).
        spec = json.dumps({'vendor_id': '10de', 'address': {'bus': '6'}})
        self.assertEqual((['0000:65:00.0'], []), self.both([spec]))

    def test_unknown_address_key_is_ignored(self):
        # Nova starts with it; failing closed took every NVIDIA device.
        spec = json.dumps({'vendor_id': '10de', 'address': {
            'bus': 'ca', 'segment': '1'}})
        self.assertEqual((['0000:ca:00.0'], []), self.both([spec]))

    def test_one_bad_object_of_a_list_withholds_its_own_ids(self):
        spec = json.dumps([
            {'vendor_id': '10de', 'product_id': '20b5',
             'address': '0000:ca:00.0'},
            {'vendor_id': '8086', 'product_id': '1593', 'address': 'zz'}])
        found, problems = self.both([spec])
        # Not every A100, and the E810 (8086:1593) is not offered.
        self.assertEqual(['0000:18:00.0', '0000:ca:00.0'], found)
        self.assertEqual(1, len(problems))
        self.assertIn('every device 8086:1593 is left to Nova', problems[0])

    def test_text_that_is_no_json_withholds_every_vendor_it_names(self):
        text = ('[{"vendor_id": "10de", "product_id": "20b5"}, '
                '{"vendor_id": "8086", "product_id": "1593"')
        found, problems = self.both([text])
        # Every 10de and 8086 function (the ASPEED BMC, 1a03, is not).
        self.assertEqual(sorted(A100S + [
            '0000:00:00.0', '0000:18:00.0']), sorted(found))
        self.assertEqual(2, len(problems))

    def test_one_time_use_selects_what_it_names(self):
        spec = {'vendor_id': '10de', 'product_id': '20b5',
                'address': '0000:ca:00.0', 'one_time_use': 'true'}
        self.assertEqual((['0000:ca:00.0'], []),
                         self.both([json.dumps(spec)]))

    def test_nova_alone_rejects_one_time_use_here(self):
        # Why one_time_use is left out of what Nova's parser sees: Nova
        # checks it against its own process-wide [pci]
        # report_in_placement, never loaded here.
        from nova import exception as nova_exception
        from nova.pci import devspec
        self.assertRaises(nova_exception.PciConfigInvalidSpec,
                          devspec.PciDeviceSpec,
                          {'vendor_id': '10de', 'one_time_use': 'true'})

    def test_a_number_as_regex_fails_closed(self):
        # Nova's parser fails with a TypeError (measured): a rejection.
        spec = json.dumps({'vendor_id': '10de', 'product_id': '20b5',
                           'address': {'bus': 23}})
        found, problems = self.both([spec])
        self.assertEqual(A100S, sorted(a for a in found if a in A100S))
        self.assertEqual(1, len(problems))

    def test_a_number_as_vendor_id_is_no_vendor_id(self):
        # Nova's parser fails with an AttributeError (measured), which is
        # a rejection like its own errors: no hex vendor id, so no guess.
        err = self.assertRaises(exception.NovaPCIConfigUnusable, claimed,
                                ['{"vendor_id": 4318}'])
        self.assertIn('names no vendor_id', str(err))


class TestWithheldIdsAreAProblem(testtools.TestCase):
    """A value that does not parse is reported through the drivers'
    ``config_problems`` (the service's health says it)."""

    def test_driver_config_problems(self):
        self.useFixture(fixtures.FakeLogger())
        spec = ('{"vendor_id": "10de", "product_id": "20b5", '
                '"address": "0000:ca:00.9"}')
        drv = load(self, 'nvidia_gpu', base.GPU_SERVER,
                   discovery={'nova_pci_device_spec': [spec]})
        self.assertEqual([], drv.discover())
        (problem,) = drivers.config_problems([drv])
        self.assertIn('Cannot parse Nova [pci] device_spec %s' % spec,
                      problem)
        self.assertIn('every device 10de:20b5 is left to Nova', problem)
        good = load(self, 'nvidia_gpu', base.GPU_SERVER, discovery={
            'nova_pci_device_spec': ['{"vendor_id": "10de", '
                                     '"address": "0000:ca:00.0"}']})
        self.assertEqual([], drivers.config_problems([good]))
        self.assertEqual([], drivers.config_problems([object()]))
