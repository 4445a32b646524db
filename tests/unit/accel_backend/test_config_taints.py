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

"""Taints from the configuration file, ``[taints] devices`` (issue 53
item 1; ``agent.discovery.config_taints``, ``conductor.config_taints``):
set by the discovery pass, shown by the API at 2.5, reserved in a real
Placement (or, with a tolerable key, its trait), kept from the binder,
and removed by the first pass without the line.  Host: the recorded
``gpu-server`` tree, one provider per GPU; and 8 pooled H100s for a
function of a pool."""

import json

from oslo_config import cfg

from accel_backend import service as service_mod
from accel_common import arq_states
from accel_common import taints
from tests.unit.accel_backend import test_lifecycle
from tests.unit.accel_backend import test_pooled
from tests.unit.accel_backend import test_taints

BAD = '0000:ca:00.0'
RULE = json.dumps({'address': BAD, 'key': 'burn-in',
                   'effect': 'NoSchedule', 'reason': 'new board'})


class ConfigTaintsTest(test_lifecycle.ServiceTestBase):

    def service(self, rules=(), **taints_opts):
        opts = dict(taints_opts, devices=list(rules))
        svc = self.make_service(self.make_conf(groups={'taints': opts}))
        svc.discover_and_report()
        return svc

    def shown(self, svc, address):
        """The taints ``GET /v2/deployables`` shows for ``address``."""
        rp = test_lifecycle.rp_uuid(address)
        (dep,) = [d for d in self.call(
            svc, '/v2/deployables', test_taints.V25).json['deployables']
            if d['rp_uuid'] == rp]
        return dep['taints']

    def test_set_by_the_pass_and_removed_without_the_line(self):
        svc = self.service([RULE])
        (taint,) = self.shown(svc, BAD)
        self.assertEqual(
            ('burn-in', 'NoSchedule', 'new board', taints.CONFIG_SET_BY,
             None),
            (taint['key'], taint['effect'], taint['reason'],
             taint['set_by'], taint['function']))
        self.assertEqual((1, 1), self.reserved(BAD))
        self.assertEqual((0, 1), self.reserved(test_lifecycle.GPU))
        self.assertEqual(arq_states.BIND_FAILED, self.bind(svc, BAD)[1])
        # The next pass keeps it as it is.
        svc.discover_and_report()
        self.assertEqual([taint], self.shown(svc, BAD))
        # The line gone, the next pass removes it.
        svc = self.service()
        self.assertEqual([], self.shown(svc, BAD))
        self.assertEqual((0, 1), self.reserved(BAD))

    def test_an_api_taint_of_another_key_stays(self):
        svc = self.service()
        dep = self.call(svc, '/v2/deployables', test_taints.V25).json[
            'deployables']
        (dep,) = [d for d in dep
                  if d['rp_uuid'] == test_lifecycle.rp_uuid(BAD)]
        self.call(svc, '/v2/deployables/%s/taints' % dep['uuid'],
                  test_taints.V25, 'POST', 201,
                  {'key': 'maintenance', 'effect': 'NoExecute'})
        svc = self.service([RULE])
        svc = self.service()
        self.assertEqual(['maintenance'],
                         [t['key'] for t in self.shown(svc, BAD)])

    def test_a_tolerable_key_is_a_trait(self):
        self.service([RULE], tolerable_keys='burn-in')
        self.assertEqual((0, 1), self.reserved(BAD))
        traits = self.raw.get('/resource_providers/%s/traits' % (
            test_lifecycle.rp_uuid(BAD))).json()['traits']
        self.assertIn('CUSTOM_ACCEL_TAINT_BURN_IN', traits)

    def test_a_bad_line_refuses_the_start(self):
        for rule in ('{"address": "0000:ca:00.0", "key": "k"}',
                     '{"address": "0000:ca:00.0", "key": "k", '
                     '"effect": "Evict"}',
                     '{"address": "zz:*", "key": "k", '
                     '"effect": "NoSchedule"}',
                     'not json'):
            conf = self.make_conf(groups={'taints': {'devices': [rule]}})
            self.assertRaises(cfg.ConfigFileValueError,
                              service_mod.Service, conf)


class PoolFunctionConfigTaintTest(test_taints._TaintTestBase):
    """A line matching one function of a pool taints that function."""

    def test_one_unit_of_the_pool_reserved(self):
        rule = json.dumps({'address': test_taints.TAINTED, 'key': 'ecc',
                           'effect': 'NoSchedule'})
        svc = self.service(groups={'taints': {'devices': [rule]}})
        (taint,) = self.deployable_of(svc, test_pooled.POOL0)['taints']
        self.assertEqual((test_taints.TAINTED, taints.CONFIG_SET_BY),
                         (taint['function'], taint['set_by']))
        self.assertEqual((4, 1, 4), self.inv(test_pooled.POOL0))
        self.assertEqual((4, 0, 4), self.inv(test_pooled.POOL1))
