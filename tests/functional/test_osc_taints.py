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

"""``openstack accelerator device taint|untaint|taint list``
(``nova_accel.osc.taint``, loaded through the ``openstack.accelerator.v2``
entry points of the installed nova-accel) against a running accel-backend
and Placement: the real ``openstack`` program once, the rest through its
entry point in one long-lived process (``cli.OpenStackShell``)."""

from tests.functional.fixtures import cli
from tests.functional.fixtures import clients as clients_fx
from tests.functional.fixtures.clients import ClientsTestCase


setUpModule = clients_fx.start_servers
tearDownModule = clients_fx.stop_servers


class TestTaintCommands(ClientsTestCase):

    def setUp(self):
        super().setUp()
        self.osc = self.useFixture(cli.OpenStackShell(
            self.accel.endpoint, self.nova.endpoint, 'osc'))
        self.gpu = self.stack.gpus['0000:af:00.0']

    def reserved(self):
        inv = self.stack.placement.request(
            'GET', '/resource_providers/%s/inventories' %
            self.gpu['rp_uuid'])['inventories']['PGPU']
        return inv['reserved'], inv['total']

    def test_taint_list_untaint(self):
        dep = self.gpu['uuid']
        self.assertEqual((0, 1), self.reserved())
        taint = self.osc('accelerator', 'device', 'taint', dep,
                         '--key', 'maintenance', '--effect', 'NoSchedule',
                         '--reason', 'fan noise')
        self.assertEqual(('maintenance', 'NoSchedule', 'fan noise', None),
                         (taint['key'], taint['effect'], taint['reason'],
                          taint['function']))
        self.assertEqual((1, 1), self.reserved())
        # What an operator types: the installed openstack program.
        program = self.useFixture(cli.OpenStackProgram(
            self.accel.endpoint, self.nova.endpoint))
        listed = program('accelerator', 'device', 'taint', 'list', dep)
        self.assertEqual([taint['uuid']], [t['uuid'] for t in listed])
        self.osc('accelerator', 'device', 'untaint', dep, '--key',
                 'maintenance', fmt=None)
        self.assertEqual([], self.osc('accelerator', 'device', 'taint',
                                      'list', dep))
        self.assertEqual((0, 1), self.reserved())

    def test_errors_are_one_line_with_the_code(self):
        dep = self.gpu['uuid']
        out = self.osc('accelerator', 'device', 'taint',
                       '9d3a2c1e-0000-4000-8000-000000000001', '--key', 'k',
                       '--effect', 'NoSchedule', fmt=None, expect_rc=1)
        self.assertIn('accel.deployable.not_found', out)
        out = self.osc('accelerator', 'device', 'taint', dep, '--key', 'k',
                       '--effect', 'NoWay', fmt=None, expect_rc=2)
        self.assertIn("invalid choice: 'NoWay'", out)
        out = self.osc('accelerator', 'device', 'untaint', dep, '--key',
                       'absent', fmt=None, expect_rc=1)
        self.assertIn('has no taint absent', out)
        member = self.useFixture(cli.OpenStackShell(
            self.accel.endpoint, self.nova.endpoint, 'osc',
            token='alice:project-a'))
        self.assert_refused(member, 'accelerator', 'device', 'taint', dep,
                            '--key', 'k', '--effect', 'NoSchedule')
        self.assertEqual((0, 1), self.reserved())
