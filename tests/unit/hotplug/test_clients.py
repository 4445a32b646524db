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

"""Hot-plug's accelerator client and Nova's build-time one share the
process's one ``[cyborg]`` keystoneauth session."""

import nova.conf
from nova import context as nova_context
from oslo_config import fixture as config_fixture
import testtools

from nova_accel.cyborg_client import client as client_mod
from nova_accel.cyborg_client import transport
from nova_accel.hotplug import clients


class TestOneSession(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # Parsed with no file, as Nova's own ConfFixture does.
        nova.conf.CONF([], default_config_files=[])
        conf = self.useFixture(config_fixture.Config(nova.conf.CONF))
        conf.config(group='cyborg',
                    endpoint_override='http://accel.invalid/v2')
        conf.config(group='service_user', auth_type=None)
        self.context = nova_context.RequestContext(
            user_id='u', project_id='p', auth_token='token')

    def test_hotplug_and_build_clients_share_the_session(self):
        hotplug = clients.accel_client(self.context)
        build = client_mod.AcceleratorClient.from_context(self.context)
        self.assertIs(transport.conf_session(), hotplug._adapter.session)
        self.assertIs(hotplug._adapter.session, build._adapter.session)
        # Each with its own auth: the service wrapper for hot-plug.
        self.assertIsNot(hotplug._adapter.auth, build._adapter.auth)
