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

"""``GET /v2/deployables/free_by_numa_node`` (microversion 2.4,
``objects.numa_free``): the free units of each NUMA node of a pool
spanning nodes, on the two-socket 8-GPU server of ``test_pooled``."""

from accel_backend.db import models
from tests.unit.accel_backend import test_lifecycle
from tests.unit.accel_backend import test_numa_span
from tests.unit.accel_backend import test_pooled

PATH = '/v2/deployables/free_by_numa_node'
V24 = dict(test_lifecycle.ADMIN,
           **{'OpenStack-API-Version': 'accelerator 2.4'})
#: Nova's scheduler with its ``[service_user]`` credentials.
SERVICE_USER = {'X-Roles': 'service', 'X-User-Id': 'nova',
                'X-Project-Id': 's' * 32,
                'OpenStack-API-Version': 'accelerator 2.4'}
MEMBER = dict(SERVICE_USER, **{'X-Roles': 'member,reader'})


class FreeByNumaNodeTest(test_pooled.PooledTest):

    def service(self, **kw):
        return super().service(pool_numa_span='true', **kw)

    bind_patch = test_numa_span.TestSpanningBinds.bind_patch

    def free(self, svc, headers=V24):
        return self.call(svc, PATH, headers=headers).json['deployables']

    def test_counts_follow_binds_per_node(self):
        svc = self.service()
        rp = self.providers()[test_pooled.POOL]['uuid']
        (pool,) = self.free(svc)
        self.assertEqual((rp, {'0': 4, '1': 4}),
                         (pool['rp_uuid'], pool['free_by_numa_node']))
        self.bind_patch(svc, {'resources:PGPU': '3',
                              'trait:CUSTOM_NUMA_NODE_1': 'required'})
        self.assertEqual({'0': 4, '1': 1},
                         self.free(svc)[0]['free_by_numa_node'])
        self.bind_patch(svc, {'resources:PGPU': '5'})
        self.assertEqual({'0': 0, '1': 0},
                         self.free(svc)[0]['free_by_numa_node'])

    def test_a_disabled_pool_has_nothing_free(self):
        svc = self.service()
        (pool,) = self.free(svc)
        dev = self.call(svc, '/v2/deployables/%s' % pool['uuid'],
                        headers=V24).json['device_id']
        with svc.db.transaction() as session:
            dev_uuid = session.get(models.Device, dev).uuid
        self.call(svc, '/v2/devices/%s/disable' % dev_uuid, headers=V24,
                  method='POST')
        self.assertEqual({'0': 0, '1': 0},
                         self.free(svc)[0]['free_by_numa_node'])

    def test_service_role_reads_a_member_does_not(self):
        svc = self.service()
        self.assertEqual(1, len(self.free(svc, SERVICE_USER)))
        resp = self.call(svc, PATH, headers=MEMBER, status=403)
        self.assertEqual('accel.policy.forbidden',
                         resp.json['errors'][0]['code'])

    def test_before_2_4_the_path_answers_as_before(self):
        svc = self.service()
        for version in ('2.0', '2.3'):
            headers = dict(test_lifecycle.ADMIN, **{
                'OpenStack-API-Version': 'accelerator ' + version})
            old = self.call(svc, '/v2/deployables/not-a-uuid',
                            headers=headers, status=400).json
            new = self.call(svc, PATH, headers=headers, status=400).json
            self.assertEqual(old['errors'][0]['code'],
                             new['errors'][0]['code'])


class PerNodePoolsTest(test_pooled.PooledTest):

    def test_pools_on_one_node_are_left_out(self):
        svc = self.service(pool_numa_span='false')
        self.assertEqual(2, len(self.providers()))
        self.assertEqual([], self.call(svc, PATH, headers=V24
                                       ).json['deployables'])
