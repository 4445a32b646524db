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

"""Hot-plugged ARQs recorded in an instance's system_metadata."""

import types

import testtools

from nova_accel.hotplug import state


def instance(**sysmeta):
    return types.SimpleNamespace(system_metadata=dict(sysmeta))


class StateTest(testtools.TestCase):

    def test_record_find_forget(self):
        inst = instance(image_foo='bar')
        self.assertFalse(state.has_hotplugged(inst))
        first = state.record(inst, 'gpu', [('a1', 'rp1', {'PGPU': 1}),
                                           ('a2', 'rp1', None)])
        second = state.record(inst, 'fpga', [('b1', 'rp2', {'FPGA': 1})])
        self.assertEqual(('a1', 'b1'), (first, second))
        self.assertTrue(state.has_hotplugged(inst))
        self.assertEqual({'a1', 'a2', 'b1'}, state.arq_uuids(inst))
        self.assertEqual(
            {'a1': {'profile': 'gpu', 'arqs': ['a1', 'a2'],
                    'allocation': {'rp1': {'resources': {'PGPU': 1}}}},
             'b1': {'profile': 'fpga', 'arqs': ['b1'],
                    'allocation': {'rp2': {'resources': {'FPGA': 1}}}}},
            dict(state.attachments(inst)))
        self.assertEqual('b1', state.find(inst, 'fpga'))
        self.assertIsNone(state.find(inst, 'nope'))
        for key, value in inst.system_metadata.items():
            self.assertLessEqual(len(key), 255)
            self.assertLessEqual(len(value), 255)

        state.forget(inst, 'a1')
        self.assertEqual({'b1'}, state.arq_uuids(inst))
        state.forget(inst)
        self.assertEqual({'image_foo': 'bar'}, inst.system_metadata)

    def test_same_profile_twice(self):
        inst = instance()
        state.record(inst, 'gpu', [('a1', 'rp1', {'PGPU': 1})])
        state.record(inst, 'gpu', [('b1', 'rp2', {'PGPU': 1})])
        attach_id = state.find(inst, 'gpu')
        state.forget(inst, attach_id)
        self.assertEqual(1, len(state.attachments(inst)))
        self.assertEqual('gpu', state.attachments(inst)[
            state.find(inst, 'gpu')]['profile'])

    def test_garbage_is_ignored(self):
        inst = instance(**{'accel_hotplug:x': '{}',
                           'accel_hotplug:y:z': 'not json'})
        self.assertEqual({}, dict(state.attachments(inst)))

    def test_no_system_metadata(self):
        self.assertFalse(state.has_hotplugged(types.SimpleNamespace()))
