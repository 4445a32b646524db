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

"""Health of the devices discovery drivers find (``test_drivers``): AER
counts and their verdict, functions fallen off the bus, PCIe links, and
the reset methods cleaning may use."""

import os

import fixtures
import testtools

from accel_backend.agent.discovery import sysfs
from tests.unit.accel_backend import base
from tests.unit.accel_backend import sysfs_tree
from tests.unit.accel_backend.test_drivers import copy_tree
from tests.unit.accel_backend.test_drivers import load


class TestHealth(testtools.TestCase):

    def test_fatal_aer_count_goes_to_board_info(self):
        # The driver reports the count; discovery.aer judges new errors
        # against the previous pass (host_sync).
        root = copy_tree(self, base.GPU_SERVER)
        with open(os.path.join(root, '0000:ca:00.0', 'aer_dev_fatal'),
                  'w') as f:
            f.write(sysfs_tree.aer_fatal_text(2))
        found = {d.address: d for d in load(
            self, 'nvidia_gpu', root).discover()}
        self.assertEqual(2, found['0000:ca:00.0'].std_board_info[
            'aer_dev_fatal'])
        self.assertEqual(0, found['0000:17:00.0'].std_board_info[
            'aer_dev_fatal'])

    def test_check_can_be_turned_off(self):
        root = copy_tree(self, base.GPU_SERVER)
        with open(os.path.join(root, '0000:ca:00.0', 'aer_dev_fatal'),
                  'w') as f:
            f.write(sysfs_tree.aer_fatal_text(2))
        found = load(self, 'nvidia_gpu', root,
                     discovery={'health_check': 'false'}).discover()
        self.assertEqual({'healthy'}, {d.health for d in found})
        self.assertFalse([d for d in found
                          if 'aer_dev_fatal' in d.std_board_info])


class TestAERVerdict(testtools.TestCase):
    """``common.aer.verdict``: new errors, not totals, with recovery
    after quiet passes."""

    def passes(self, totals, recovery=3, first=None):
        """Run ``verdict`` over successive totals; returns the reasons
        (None: healthy)."""
        from accel_backend.common import aer
        previous, out = first, []
        for total in totals:
            current = {'aer_dev_fatal': total}
            out.append(aer.verdict(previous, current, recovery))
            previous = current
        return out

    def test_old_errors_count_at_first_sight_then_recover(self):
        got = self.passes([2, 2, 2, 2])
        self.assertIn('2 new fatal PCIe AER errors', got[0])
        self.assertIn('recovering: 1 of 3', got[1])
        self.assertIn('recovering: 2 of 3', got[2])
        self.assertIsNone(got[3])

    def test_never_any_error(self):
        self.assertEqual([None] * 3, self.passes([0, 0, 0]))

    def test_new_error_while_recovering_starts_over(self):
        got = self.passes([0, 1, 1, 3, 3, 3, 3], recovery=2)
        self.assertIsNone(got[0])
        self.assertIn('1 new fatal', got[1])
        self.assertIn('recovering: 1 of 2', got[2])
        self.assertIn('2 new fatal', got[3])
        self.assertIn('recovering: 1 of 2', got[4])
        self.assertEqual([None, None], got[5:])

    def test_reboot_resets_the_count(self):
        got = self.passes([5, 5, 5, 5, 1], first={'aer_dev_fatal': 0})
        self.assertIsNone(got[3])
        self.assertIn('1 new fatal', got[4])

    def test_not_shown(self):
        from accel_backend.common import aer
        self.assertIsNone(aer.verdict({'aer_dev_fatal': 3}, {}, 3))

    def test_reset_function(self):
        root = copy_tree(self, base.GPU_SERVER)
        sysfs.reset_function(root, '0000:17:00.0')
        with open(os.path.join(root, '0000:17:00.0', 'reset')) as f:
            self.assertEqual('1', f.read())
        # Never creates the file: no reset support is an error.
        self.assertRaises(OSError, sysfs.reset_function, root,
                          '0000:00:00.0')
        self.assertFalse(os.path.exists(
            os.path.join(root, '0000:00:00.0', 'reset')))
        self.assertRaises(OSError, sysfs.reset_function, root,
                          '../../etc')


class TestFellOffTheBus(testtools.TestCase):
    """A function whose config space reads all ones (the recorded
    ``gpu-server`` tree with a ``config`` file written as the kernel shows
    it: 256 bytes for a conventional read, 0xff when nothing answers)."""

    def setUp(self):
        super().setUp()
        self.root = copy_tree(self, base.GPU_SERVER)
        self.gpu = '0000:17:00.0'

    def write_config(self, head):
        with open(os.path.join(self.root, self.gpu, 'config'), 'wb') as f:
            f.write(head + b'\x00' * (256 - len(head)))

    def health(self):
        (dep,) = [d for d in load(self, 'nvidia_gpu', self.root).discover()
                  if d.address == self.gpu]
        return dep.health, dep.health_reason

    def test_all_ones_is_gone(self):
        self.write_config(b'\xff' * 4)
        health, reason = self.health()
        self.assertEqual('unhealthy', health)
        self.assertIn('0xffffffff: it fell off the bus', reason)

    def test_real_ids_are_present(self):
        self.write_config(b'\xde\x10\xb8\x1e')   # 10de:1eb8, little end.
        self.assertEqual(('healthy', None), self.health())


class TestLink(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        self.root = copy_tree(self, base.GPU_SERVER)
        self.gpu = '0000:17:00.0'

    def link(self, speed, width, max_speed='16.0 GT/s PCIe',
             max_width='16'):
        for name, text in (('current_link_speed', speed),
                           ('current_link_width', width),
                           ('max_link_speed', max_speed),
                           ('max_link_width', max_width)):
            with open(os.path.join(self.root, self.gpu, name), 'w') as f:
                f.write(text + '\n')
        (dep,) = [d for d in load(self, 'nvidia_gpu', self.root).discover()
                  if d.address == self.gpu]
        return dep.std_board_info['link']

    def test_full_link(self):
        self.assertEqual('16.0 GT/s PCIe x16',
                         self.link('16.0 GT/s PCIe', '16'))
        self.assertNotIn('trained', self.logger.output)

    def test_idle_speed_shown_not_warned(self):
        self.assertEqual('2.5 GT/s PCIe x16 (max 16.0 GT/s PCIe x16)',
                         self.link('2.5 GT/s PCIe', '16'))
        self.assertNotIn('trained', self.logger.output)

    def test_narrow_link_warned(self):
        self.assertEqual('16.0 GT/s PCIe x8 (max 16.0 GT/s PCIe x16)',
                         self.link('16.0 GT/s PCIe', '8'))
        self.assertIn('the PCIe link of %s trained narrower than its '
                      'maximum: x8, not x16' % self.gpu, self.logger.output)

    def test_no_link_files(self):
        (dep,) = [d for d in load(self, 'nvidia_gpu', self.root).discover()
                  if d.address == self.gpu]
        self.assertNotIn('link', dep.std_board_info)


class TestResetMethods(testtools.TestCase):
    """Cleaning follows what the kernel offers (``sysfs.reset_methods``):
    ``flr`` on a function without a reset method would fail after every
    tenant and lock the GPU out."""

    def setUp(self):
        super().setUp()
        self.logger = self.useFixture(fixtures.FakeLogger())
        self.root = copy_tree(self, base.GPU_SERVER)
        self.gpu = '0000:17:00.0'

    def write(self, name, text):
        with open(os.path.join(self.root, self.gpu, name), 'w') as f:
            f.write(text)

    def discover(self):
        (dep,) = [d for d in load(self, 'nvidia_gpu', self.root).discover()
                  if d.address == self.gpu]
        return dep

    def test_methods_named_by_the_kernel(self):
        self.write('reset_method', 'flr bus\n')
        dep = self.discover()
        self.assertEqual(('flr', 'flr bus'),
                         (dep.cleaning, dep.std_board_info['reset_method']))

    def add_function_on_its_bus(self):
        """An audio function at ``.1`` of the GPU's slot, as HDMI audio of
        a GPU sits (class 0x0403, format of the kernel's sysfs ABI)."""
        audio = os.path.join(self.root, self.gpu[:-1] + '1')
        os.mkdir(audio)
        for name, text in (('vendor', '0x10de'), ('device', '0x1aef'),
                           ('class', '0x040300')):
            with open(os.path.join(audio, name), 'w') as f:
                f.write(text + '\n')

    def cleaning_with(self, methods, beside_another=False):
        """``(cleaning, std_board_info reset_method)`` of the GPU whose
        ``reset_method`` lists ``methods``, with or without another
        function on its bus."""
        self.write('reset_method', methods + '\n')
        if beside_another:
            self.add_function_on_its_bus()
        dep = self.discover()
        return dep.cleaning, dep.std_board_info['reset_method']

    def test_bus_reset_alone_on_its_bus_is_kept(self):
        self.assertEqual(('flr', 'bus'), self.cleaning_with('bus'))

    def test_bus_reset_beside_another_function_is_no_reset(self):
        # The kernel lists ``bus`` for a GPU's function 0 (probed before
        # its audio function was added) but refuses the reset: cleaning
        # none, not a reset that fails after every tenant.
        self.assertEqual(('none', 'none'),
                         self.cleaning_with('bus', beside_another=True))
        self.assertIn('the kernel offers no reset for %s' % self.gpu,
                      self.logger.output)

    def test_flr_beside_another_function_is_kept(self):
        self.assertEqual(('flr', 'flr'),
                         self.cleaning_with('flr bus', beside_another=True))

    def test_kernel_before_5_15_names_no_method(self):
        dep = self.discover()
        self.assertEqual(('flr', 'reset'),
                         (dep.cleaning, dep.std_board_info['reset_method']))

    def test_no_reset_means_no_flr(self):
        os.unlink(os.path.join(self.root, self.gpu, 'reset'))
        dep = self.discover()
        self.assertEqual(('none', 'none'),
                         (dep.cleaning, dep.std_board_info['reset_method']))
        self.assertIn('the kernel offers no reset for %s' % self.gpu,
                      self.logger.output)
        # The other GPUs keep flr.
        others = {d.cleaning for d in load(
            self, 'nvidia_gpu', self.root).discover()
            if d.address != self.gpu}
        self.assertEqual({'flr'}, others)

    def test_command_is_kept_without_a_reset(self):
        os.unlink(os.path.join(self.root, self.gpu, 'reset'))
        (dep,) = [d for d in load(
            self, 'nvidia_gpu', self.root,
            cleaning={'methods': 'nvidia_gpu:command'}).discover()
            if d.address == self.gpu]
        self.assertEqual('command', dep.cleaning)
