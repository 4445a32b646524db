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

"""Which ARQs ``nova_accel.hotplug.replace`` takes: a Bound ARQ of the
instance with a PCI attach handle (the accelerator API's answer is the
boundary here; tests/functional/test_replace.py runs the whole)."""

import testtools

from nova_accel.hotplug import exception
from nova_accel.hotplug import replace


class Answers:
    """The accelerator API's ARQs of one instance."""

    def __init__(self, arqs):
        self.arqs = arqs

    def get_arqs_for_instance(self, instance_uuid):
        return self.arqs


class Instance:
    uuid = '5b7a2c1e-0000-4000-8000-000000000001'


class BoundArqTest(testtools.TestCase):

    def check(self, arq, reason):
        manager = replace.ReplaceManager(driver=None, host='compute1')
        err = self.assertRaises(exception.ARQNotReplaceable,
                                manager._bound_arq, Answers([arq]),
                                Instance(), 'a1')
        self.assertIn(reason, str(err))

    def test_pci_bound_arq_is_taken(self):
        arq = {'uuid': 'a1', 'state': 'Bound', 'attach_handle_type': 'PCI'}
        manager = replace.ReplaceManager(driver=None, host='compute1')
        self.assertIs(arq, manager._bound_arq(Answers([arq]), Instance(),
                                              'a1'))

    def test_mdev_is_refused(self):
        self.check({'uuid': 'a1', 'state': 'Bound',
                    'attach_handle_type': 'MDEV'},
                   'its attach handle is MDEV; only PCI devices')

    def test_unbound_or_missing_is_refused(self):
        self.check({'uuid': 'a1', 'state': 'Initial',
                    'attach_handle_type': ''}, 'not a Bound ARQ')
        self.check({'uuid': 'other', 'state': 'Bound',
                    'attach_handle_type': 'PCI'}, 'not a Bound ARQ')
