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

"""PCI addresses in their three spellings and address patterns
(``accel_common.pci``)."""

import fnmatch

import fixtures
import testtools

from accel_common import pci


class TestPCI(testtools.TestCase):

    def test_spellings_agree(self):
        addr = pci.parse('0000:af:1f.7')
        self.assertEqual((0, 0xaf, 0x1f, 7), addr)
        self.assertEqual('0000:af:1f.7', str(addr))
        self.assertEqual(addr, pci.from_fields('0x0000', '0xaf', '0x1f',
                                               '0x7'))
        self.assertEqual(addr, pci.from_handle_info(addr.handle_info()))
        self.assertEqual({'domain': '0000', 'bus': 'af', 'device': '1f',
                          'function': '7'}, addr.handle_info())
        self.assertEqual('pci_0000_af_1f_7', addr.nodedev_name())
        self.assertEqual([('domain', '0x0000'), ('bus', '0xaf'),
                          ('slot', '0x1f'), ('function', '0x7')],
                         addr.libvirt_attrs())

    def test_sysfs_spelling_refused(self):
        for text in ('0000:af:20.0', '0000:af:00.8', '000:af:00.0',
                     '0000:AF:00.0', '0000:af:00', None, 12):
            self.assertRaises(pci.InvalidAddress, pci.parse, text)

    def test_fields_refused(self):
        cases = [
            (('0x10000', '0', '0', '0'), 'PCI domain'),
            (('0', '0x100', '0', '0'), 'is not a hexadecimal number'),
            (('0', '0', '0x20', '0'), 'out of range (max 0x1f)'),
            (('0', '0', '0', '8'), 'out of range (max 0x7)'),
            (('0', 'zz', '0', '0'), 'PCI bus'),
            (('0', 0, '0', '0'), 'must be a hexadecimal string'),
        ]
        for fields, needle in cases:
            err = self.assertRaises(pci.InvalidAddress, pci.from_fields,
                                    *fields)
            self.assertIn(needle, str(err))

    def test_handle_info_refused(self):
        self.assertIn('has no \'device\'', str(self.assertRaises(
            pci.InvalidAddress, pci.from_handle_info,
            {'domain': '0', 'bus': '0', 'function': '0'})))
        self.assertIn('PCI device', str(self.assertRaises(
            pci.InvalidAddress, pci.from_handle_info,
            {'domain': '0', 'bus': '0', 'device': '20', 'function': '0'})))
        self.assertRaises(pci.InvalidAddress, pci.from_handle_info, None)


#: Addresses every pattern of the tables is matched against.
UNIVERSE = ('0000:00:02.0', '0000:3b:00.0', '0000:3b:00.1', '0000:41:00.0',
            '0000:8a:1f.7', '0000:af:00.0', '0000:af:01.3', '0001:af:00.0',
            '00af:00:00.0')
BUS_00 = {'0000:00:02.0', '00af:00:00.0'}
BUS_AF = {'0000:af:00.0', '0000:af:01.3', '0001:af:00.0'}
SLOT_00_FN_0 = {'0000:3b:00.0', '0000:41:00.0', '0000:af:00.0',
                '0001:af:00.0', '00af:00:00.0'}
DOMAIN_0_FN_0 = {'0000:00:02.0', '0000:3b:00.0', '0000:41:00.0',
                 '0000:af:00.0'}

#: ``(pattern, kind, matched)``: the dialect (Nova's [pci] device_spec
#: address), read the same with and without ``legacy_globs``.
DIALECT = [
    ('0000:af:00.0', 'glob', {'0000:af:00.0'}),
    ('0000:af:*', 'glob', {'0000:af:00.0', '0000:af:01.3'}),
    ('*:af:*.*', 'glob', BUS_AF),
    (':af:', 'glob', BUS_AF),
    ('af:', 'glob', BUS_AF),
    ('*:3b:00.*', 'glob', {'0000:3b:00.0', '0000:3b:00.1'}),
    ('.1', 'glob', {'0000:3b:00.1'}),
    ('00.0', 'glob', SLOT_00_FN_0),
    ('1f.7', 'glob', {'0000:8a:1f.7'}),
    ('', 'glob', set(UNIVERSE)),
    ('*', 'glob', set(UNIVERSE)),
    ('*:*:*.*', 'glob', set(UNIVERSE)),
    ('0x0000:0XAF:0x00.0x0', 'glob', {'0000:af:00.0'}),
    (' 0000 : AF : 00 . 0 ', 'glob', {'0000:af:00.0'}),
    ('0:af:0.0', 'glob', {'0000:af:00.0'}),
    ('00AF:*', 'glob', BUS_AF),  # the dialect's bus, any case
    ({'bus': 'a'}, 'regex', BUS_AF),
    ({'domain': '0000', 'bus': '3b', 'function': '[01]'}, 'regex',
     {'0000:3b:00.0', '0000:3b:00.1'}),
    ({'bus': 'af$', 'physical_network': 'physnet1'}, 'regex', BUS_AF),
    ({'slot': '1'}, 'regex', {'0000:8a:1f.7'}),  # zero-padded: not 01
    ({}, 'regex', set(UNIVERSE)),
]

#: ``(pattern, matched with legacy_globs, matched without)``: what a
#: shell glob read the other way (the glob's domain, Nova's bus).
AMBIGUOUS = [
    ('0000:*', {a for a in UNIVERSE if a.startswith('0000:')},
     BUS_00),
    ('0000:*.0', DOMAIN_0_FN_0, BUS_00),
]

#: ``(pattern, matched)``: former shell globs, kept with
#: ``legacy_globs`` (deprecated), refused without.
GLOBS = [
    ('0000:af:0*', {'0000:af:00.0', '0000:af:01.3'}),
    ('0000:*:00.[01]', {'0000:3b:00.0', '0000:3b:00.1', '0000:41:00.0',
                        '0000:af:00.0'}),
    ('0000:3b:00.?', {'0000:3b:00.0', '0000:3b:00.1'}),
    ('*:af:0[!0].*', {'0000:af:01.3'}),
    ('000?:af:*', BUS_AF),
]

#: ``(pattern, what the error says)``: refused in both modes.
INVALID = [
    ('0000:zz:00.0', "bus 'zz' is neither a hex number nor *"),
    ('0000:af:20.0', "slot '20' is out of range (max 0x1f)"),
    ('0000:af:00.8', "function '8' is out of range (max 0x7)"),
    ('10000:af:00.0', "domain '10000' is out of range (max 0xffff)"),
    ('0:0:0:0.0', 'more than three fields'),
    ('0000:af:00.0.1', "function '0.1' is neither"),
    ('garbage', "slot 'garbage' is neither"),
    ('0000:af:*, 0000:3b:*', 'more than three fields'),
    ({'bus': '('}, "bad bus regular expression '('"),
    ({'function': 1}, 'function must be a regular expression'),
    (5, 'must be a string or an object'),
    (['0000:af:00.0'], 'must be a string or an object'),
]


class TestParseId(testtools.TestCase):
    """``parse_id``: the one reading of vendor and device ids (Nova's,
    nova/pci/devspec.py)."""

    def test_spellings(self):
        for text in ('10de', '10DE', '0x10de', '0X10De', ' 10de\n',
                     '010de'):
            with self.subTest(text=text):
                self.assertEqual(0x10de, pci.parse_id(text))
        self.assertEqual(0, pci.parse_id('0'))
        self.assertEqual(pci.MAX_ID, pci.parse_id('ffff'))
        self.assertEqual('00ab', pci.id_text(pci.parse_id('ab')))

    def test_refused(self):
        for value in ('', '0x', 'zz', '10de:1eb8', '-1', '+10de', '1_0de',
                      '10000', None, 4318, '*'):
            with self.subTest(value=value):
                self.assertRaises(pci.InvalidId, pci.parse_id, value)
        err = self.assertRaises(pci.InvalidId, pci.parse_id, '10000',
                                'vendor_id')
        self.assertEqual("vendor_id '10000' is out of range (max 0xffff)",
                         str(err))

    def test_exact_digits(self):
        self.assertEqual(0x10de, pci.parse_id('0x10de', digits=4))
        for text in ('10d', '010de'):
            err = self.assertRaises(pci.InvalidId, pci.parse_id, text,
                                    'product_id', 4)
            self.assertIn('product_id %r is not a hexadecimal number of 4 '
                          'digits' % text, str(err))


class TestAddressPattern(testtools.TestCase):
    """``compile_pattern``: every form of the dialect, the former globs
    and what is refused."""

    OPTION = '[test] addresses'

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        self.useFixture(fixtures.MockPatchObject(pci, '_WARNED', set()))

    def matched(self, pattern, legacy_globs):
        compiled = pci.compile_pattern(pattern, self.OPTION, legacy_globs)
        return compiled, {a for a in UNIVERSE if compiled.matches(a)}

    def test_dialect(self):
        for legacy in (False, True):
            for pattern, kind, want in DIALECT:
                compiled, got = self.matched(pattern, legacy)
                self.assertEqual((kind, want), (compiled.kind, got),
                                 (pattern, legacy))
                self.assertEqual(pattern, compiled.text)
        self.assertEqual('', self.logger.output)

    def test_address_objects_match_too(self):
        compiled = pci.compile_pattern('*:af:*', self.OPTION)
        self.assertTrue(compiled.matches(pci.Address(1, 0xaf, 0, 0)))
        self.assertFalse(compiled.matches(pci.Address(1, 0xae, 0, 0)))
        self.assertRaises(pci.InvalidAddress, compiled.matches, 'af:00.0')

    def test_ambiguous_shape_keeps_the_glob_meaning(self):
        for pattern, legacy_want, nova_want in AMBIGUOUS:
            compiled, got = self.matched(pattern, True)
            self.assertEqual(('fnmatch', legacy_want), (compiled.kind, got))
            compiled, got = self.matched(pattern, False)
            self.assertEqual(('glob', nova_want), (compiled.kind, got))
        self.assertIn("[test] addresses: PCI address pattern '0000:*' is "
                      "read as a shell glob, which is deprecated (as a glob "
                      "0000 is the domain; Nova reads it as the bus)",
                      self.logger.output)

    def test_former_globs(self):
        for pattern, want in GLOBS:
            compiled, got = self.matched(pattern, True)
            self.assertEqual(('fnmatch', want), (compiled.kind, got))
            self.assertIn("PCI address pattern %r is read as a shell glob, "
                          "which is deprecated" % pattern,
                          self.logger.output)
            err = self.assertRaises(pci.InvalidPattern, pci.compile_pattern,
                                    pattern, self.OPTION)
            self.assertIn('is neither a hex number nor *', str(err))

    def test_deprecation_logged_once_per_option_and_pattern(self):
        for _ in range(3):
            pci.compile_pattern('0000:af:0*', self.OPTION, True)
        pci.compile_pattern('0000:af:0*', '[other] addresses', True)
        self.assertEqual(1, self.logger.output.count(
            "[test] addresses: PCI address pattern '0000:af:0*'"))
        self.assertEqual(1, self.logger.output.count(
            "[other] addresses: PCI address pattern '0000:af:0*'"))

    def test_invalid(self):
        for legacy in (False, True):
            for pattern, needle in INVALID:
                err = self.assertRaises(
                    pci.InvalidPattern, pci.compile_pattern, pattern,
                    self.OPTION, legacy)
                self.assertIsInstance(err, ValueError)
                self.assertIn(needle, str(err), (pattern, legacy))
                self.assertTrue(str(err).startswith(
                    '[test] addresses: PCI address pattern %r: ' %
                    (pattern,)), str(err))

    def test_every_former_glob_still_matches_what_it_did(self):
        # Where the shell glob (fnmatch, case-sensitive on POSIX) matched
        # something, the legacy reading matches the same addresses; where
        # it matched nothing (a short field, a left-out domain), the
        # dialect may match more.
        strings = [p for p, _, _ in DIALECT if isinstance(p, str)] + \
            [p for p, _, _ in AMBIGUOUS] + [p for p, _ in GLOBS]
        for pattern in strings:
            before = {a for a in UNIVERSE if fnmatch.fnmatchcase(a, pattern)}
            if before:
                self.assertEqual(before, self.matched(pattern, True)[1],
                                 pattern)
