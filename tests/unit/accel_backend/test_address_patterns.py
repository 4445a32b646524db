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

"""The three options that select PCI functions by address read their
patterns through ``accel_common.pci.compile_pattern``: ``[discovery]
device_spec`` ``"address"`` and ``[mdev_<type>] device_addresses`` (which
took shell globs: those still select what they did) and Nova's ``[pci]
device_spec`` read without Nova (which reads them as Nova's parser
does)."""

import fnmatch
import json

import fixtures
import testtools

from accel_backend.agent.discovery import device_spec
from accel_backend.agent.discovery import nova_pci
from accel_backend.agent.discovery import sysfs
from accel_backend import exception
from accel_common import pci
from tests.unit.accel_backend import base
from tests.unit.accel_backend import test_drivers
from tests.unit.accel_backend import test_nova_pci
from tests.unit.accel_common import test_pci as table

T4 = {'vendor_id': '10de', 'product_id': '1eb8'}


def _fn(address, physfn=None):
    return sysfs.PCIFunction(address=address, vendor_id='10de',
                             product_id='1eb8', class_code='030200',
                             physfn=physfn)


FUNCTIONS = [_fn(a) for a in table.UNIVERSE]


def _strings():
    """Every string pattern of the tables."""
    return ([p for p, _, _ in table.DIALECT if isinstance(p, str)] +
            [p for p, _, _ in table.AMBIGUOUS] + [p for p, _ in table.GLOBS])


class PatternTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        self.useFixture(fixtures.MockPatchObject(pci, '_WARNED', set()))


class TestDeviceSpecAddress(PatternTest):
    """``[discovery] device_spec`` ``"address"``: formerly
    ``fnmatch.fnmatch`` over the function's address."""

    def spec(self, address):
        return device_spec.parse(json.dumps(dict(T4, address=address)))

    def selected(self, address):
        spec = self.spec(address)
        return {fn.address for fn in FUNCTIONS if spec.matches(fn)}

    def test_selects_what_the_glob_selected(self):
        for pattern in _strings():
            before = {fn.address for fn in FUNCTIONS
                      if fnmatch.fnmatch(fn.address, pattern)}
            if before:
                self.assertEqual(before, self.selected(pattern), pattern)

    def test_every_form(self):
        for pattern, _, want in table.DIALECT:
            self.assertEqual(want, self.selected(pattern), pattern)
        for pattern, want, _ in table.AMBIGUOUS:
            self.assertEqual(want, self.selected(pattern), pattern)
        for pattern, want in table.GLOBS:
            self.assertEqual(want, self.selected(pattern), pattern)

    def test_object_form_is_kept_as_json_text(self):
        spec = self.spec({'bus': 'af', 'domain': '0000'})
        self.assertEqual('{"bus": "af", "domain": "0000"}', spec.address)
        self.assertEqual('regex', spec.address_pattern.kind)

    def test_former_glob_warns(self):
        self.spec('0000:*:00.[01]')
        self.assertIn('[discovery] device_spec "address": PCI address '
                      'pattern \'0000:*:00.[01]\' is read as a shell glob, '
                      'which is deprecated', self.logger.output)

    def test_bad_pattern_is_a_device_spec_error(self):
        for pattern, needle in table.INVALID:
            err = self.assertRaises(exception.DeviceSpecError, self.spec,
                                    pattern)
            self.assertIn('[discovery] device_spec "address": PCI address '
                          'pattern %r: %s' % (pattern, needle)
                          if isinstance(pattern, str) else needle,
                          str(err))

    def test_spec_built_directly_compiles_its_address(self):
        spec = device_spec.DeviceSpec(vendor_id='10de', product_id='1eb8',
                                      address='*:af:*')
        self.assertTrue(spec.matches(_fn('0001:af:00.0')))
        self.assertFalse(spec.matches(_fn('0001:ae:00.0')))


class TestMdevDeviceAddresses(PatternTest):
    """``[mdev_<type>] device_addresses``: formerly ``fnmatch.fnmatch``
    over the GPU's addresses.  The recorded GPU is 0000:41:00.0; a GPU no
    pattern selects gets nvidia-223, the enabled type without
    addresses."""

    def type_of_the_gpu(self, patterns):
        drv = test_drivers.load(
            self, 'mdev', base.MDEV_GPU,
            discovery={'mdev_types': 'nvidia-223,nvidia-222'},
            **{'mdev_nvidia-222': {'device_addresses': patterns}})
        return [d.subname for d in drv.discover()]

    def test_patterns(self):
        cases = [
            ('0000:41:00.0', 'nvidia-222'),
            ('0000:41:*', 'nvidia-222'),
            ('0000:c1:*', 'nvidia-223'),
            (':41:', 'nvidia-222'),  # new: a glob took no short form
            ('41:00.0', 'nvidia-222'),
            ('0000:4?:00.0', 'nvidia-222'),  # former glob
            ('0000:*', 'nvidia-222'),  # former glob: domain 0000
            ('0000:c1:00.0,0000:41:0*', 'nvidia-222'),
        ]
        for patterns, want in cases:
            self.assertEqual([want], self.type_of_the_gpu(patterns),
                             patterns)
        self.assertIn("[mdev_nvidia-222] device_addresses: PCI address "
                      "pattern '0000:4?:00.0' is read as a shell glob",
                      self.logger.output)

    def test_glob_and_dialect_agree_on_the_gpu(self):
        for pattern in _strings():
            if ',' in pattern or not pattern.strip():
                continue  # not one item of a list option
            before = fnmatch.fnmatch('0000:41:00.0', pattern)
            if before:
                self.assertEqual(['nvidia-222'],
                                 self.type_of_the_gpu(pattern), pattern)

    def test_bad_pattern_names_the_option(self):
        err = self.assertRaises(pci.InvalidPattern, self.type_of_the_gpu,
                                '0000:41:00.0,0000:zz:00.0')
        self.assertIsInstance(err, ValueError)
        self.assertEqual("[mdev_nvidia-222] device_addresses: PCI address "
                         "pattern '0000:zz:00.0': bus 'zz' is neither a hex "
                         "number nor *", str(err))


class TestNovaPCIAddress(PatternTest):
    """Nova's ``[pci] device_spec`` ``"address"`` read without Nova
    (``OwnSpec``): what Nova's own parser (``NovaSpec``) selects, and
    what it refuses, over every pattern of the tables."""

    def both(self, address):
        """``(OwnSpec, NovaSpec)`` of ``{"address": address}``, or the
        ``NovaSpecError`` each raises."""
        raw = {'address': address}
        text = json.dumps(raw)
        own = self.build(nova_pci.OwnSpec, raw, text)
        nova = self.build(nova_pci.NovaSpec, raw, text,
                          nova_pci.nova_devspec())
        return own, nova

    def build(self, cls, *args):
        try:
            return cls(*args)
        except nova_pci.NovaSpecError as e:
            return e

    def test_agrees_with_nova(self):
        patterns = ([p for p, _, _ in table.DIALECT] +
                    [p for p, _, _ in table.AMBIGUOUS] +
                    [p for p, _ in table.GLOBS] +
                    [p for p, _ in table.INVALID])
        for pattern in patterns:
            own, nova = self.both(pattern)
            self.assertEqual(isinstance(own, Exception),
                             isinstance(nova, Exception), pattern)
            if isinstance(own, Exception):
                continue
            self.assertEqual(
                [fn.address for fn in FUNCTIONS if nova.matches(fn)],
                [fn.address for fn in FUNCTIONS if own.matches(fn)],
                pattern)

    def test_dialect_without_nova(self):
        test_nova_pci.without_nova(self)
        for pattern, _, want in table.DIALECT:
            (spec,) = nova_pci.parse([json.dumps({'address': pattern})])
            self.assertIsInstance(spec, nova_pci.OwnSpec)
            self.assertEqual(want, {fn.address for fn in FUNCTIONS
                                    if spec.matches(fn)}, pattern)
        for pattern, _ in table.GLOBS:
            error = self.assertRaises(nova_pci.NovaSpecError,
                                      nova_pci.OwnSpec, {'address': pattern},
                                      pattern)
            self.assertIn('Nova [pci] device_spec "address": PCI address '
                          'pattern %r' % pattern, str(error))
        self.assertNotIn('shell glob', self.logger.output)
