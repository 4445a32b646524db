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

"""What an idle ``accel-backend-agent`` asks of the conductor (issue 55):
with the defaults an operator gets, its cleaner's safety look for dirty
devices (one ``handles_to_clean`` call) comes no more often than its
discovery pass, the host's liveness beat; releases still wake it at once
(``test_conductor``'s ``test_release_is_cleaned_by_the_agent_through_the
_conductor``).  ``benchmarks.idle`` measures what that costs."""

import threading

import testtools

from accel_backend.agent import cleaning
from accel_backend import service as service_mod
from accel_backend import transports
from tests.unit.accel_backend import base


class CountingStore:
    """The conductor as an agent's cleaner sees it
    (``conductor.rpcapi.RemoteHostStore``'s interface): nothing to clean,
    each look counted."""

    engine = None

    def __init__(self):
        self.looks = 0
        self.looked = threading.Event()

    def handles_to_clean(self):
        self.looks += 1
        self.looked.set()
        return []


class TestIdleAgent(testtools.TestCase):

    def conf(self):
        return base.make_conf(self, DEFAULT={'host': 'node1',
                                             'transport_url': 'fake://'})

    def test_the_cleaners_look_is_no_more_often_than_the_beat(self):
        conf = self.conf()
        transport = transports.get_rpc_transport(conf)
        self.addCleanup(transport.cleanup)
        agent = service_mod.Service(conf, role=service_mod.AGENT,
                                    transport=transport)
        self.addCleanup(agent.stop)
        # Before issue 55: a look every 10 s against a pass every 60 s,
        # six conductor calls a minute per idle host for the cleaner.
        self.assertGreaterEqual(agent.cleaner.poll_interval,
                                conf.discovery.report_interval)

    def test_an_idle_cleaner_looks_once_then_waits(self):
        store = CountingStore()
        cleaner = cleaning.Cleaner(store, None, self.conf(), 'node1')
        self.addCleanup(cleaner.stop)
        cleaner.start()
        self.assertTrue(store.looked.wait(5))
        store.looked.clear()
        # Not woken: no second look within a second (the old default,
        # 10 s, passes this too; the test above holds the default).
        self.assertFalse(store.looked.wait(1))
        cleaner.kick()      # a release's clean cast
        self.assertTrue(store.looked.wait(5))
        self.assertEqual(2, store.looks)
