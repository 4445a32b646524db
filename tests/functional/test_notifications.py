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

"""Versioned notifications through a real RabbitMQ: a service of ours
sends them (``[oslo_messaging_notifications] driver = messagingv2``) and an
oslo.messaging notification listener, as Ceilometer runs one, receives
them from the broker."""

import os
import queue

import oslo_messaging as messaging

from accel_backend.conductor import health_taints
from accel_backend import notifications
from accel_backend.objects import arq as arq_obj
from tests.unit.accel_backend import audit_fixtures
from tests.unit.accel_backend import sysfs_tree
from tests.unit.accel_backend import test_lifecycle
from tools.fixtures import rabbitmq

GPU = test_lifecycle.GPU
HOST = test_lifecycle.COMPUTE
WAIT = 30


class Collector:
    """Notification endpoint: every message into a queue."""

    def __init__(self):
        self.received = queue.Queue()

    def _got(self, priority, publisher_id, event_type, payload):
        self.received.put((priority, publisher_id, event_type, payload))

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('INFO', publisher_id, event_type, payload)

    def warn(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('WARN', publisher_id, event_type, payload)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._got('ERROR', publisher_id, event_type, payload)


class NotificationsTest(test_lifecycle.ServiceTestBase):

    def setUp(self):
        super().setUp()
        # Nova (wsgi-intercept): accepts the binder's events, answers the
        # audit's GET /servers/<uuid>.
        self.nova = audit_fixtures.NovaServers()
        self.NOVA_OPTS = audit_fixtures.intercept_nova(self, self.nova)
        self.rabbit = self.useFixture(rabbitmq.RabbitMQServer())
        self.collector = Collector()
        self.pending = []
        conf = self.make_conf()
        transport = messaging.get_notification_transport(
            conf, url=self.rabbit.url)
        self.addCleanup(transport.cleanup)
        listener = messaging.get_notification_listener(
            transport, [messaging.Target(topic='notifications')],
            [self.collector], executor='threading')
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)

    def make_conf(self, cleaning=None, driver='messagingv2', groups=None,
                  **discovery):
        groups = dict(groups or {})
        if driver and hasattr(self, 'rabbit'):
            groups['oslo_messaging_notifications'] = {
                'driver': driver, 'transport_url': self.rabbit.url}
        return super().make_conf(cleaning=cleaning, groups=groups,
                                 **discovery)

    def next(self, event_type):
        """The first notification of ``event_type`` not taken yet; the
        others stay for later calls (each priority has its own queue on
        the broker: an ERROR sent after an INFO may arrive first)."""
        while True:
            for i, got in enumerate(self.pending):
                if got[2] == event_type:
                    return self.pending.pop(i)
            self.pending.append(self.collector.received.get(timeout=WAIT))

    def data(self, payload, name):
        self.assertEqual(
            (name, 'accel_backend', notifications.VERSIONS[name]),
            (payload['accel_object.name'],
             payload['accel_object.namespace'],
             payload['accel_object.version']))
        self.assertEqual(set(notifications.PAYLOADS[name]),
                         set(payload['accel_object.data']))
        return payload['accel_object.data']

    def test_health_change_and_cleaning_error(self):
        svc = self.make_service(self.make_conf(cleaning={
            'methods': 'nvidia_gpu:command',
            'command': "sh -c 'echo scrub failed >&2; exit 3'"},
            aer_recovery_passes='1'))
        svc.discover_and_report()
        # Fatal AER errors on the GPU: unhealthy, then healthy again.
        aer = os.path.join(self.root, GPU, 'aer_dev_fatal')
        with open(aer, 'w') as f:
            f.write(sysfs_tree.aer_fatal_text(2))
        svc.discover_and_report()
        priority, publisher, _, payload = self.next(
            'accelerator.device.health.change')
        self.assertEqual(('WARN', 'accel-backend:%s' % HOST),
                         (priority, publisher))
        data = self.data(payload, 'DevicePayload')
        self.assertEqual((GPU, 'unhealthy', 'healthy'),
                         (data['address'], data['health'],
                          data['previous_health']))
        self.assertIn('2 new fatal PCIe AER errors', data['health_reason'])
        # The fault is a taint too (conductor.health_taints).
        _, _, _, payload = self.next('accelerator.device.taint')
        taint = self.data(payload, 'DeviceTaintPayload')
        self.assertEqual(
            (health_taints.HEALTH_KEY, 'NoExecute', HOST,
             test_lifecycle.rp_uuid(GPU), health_taints.SET_BY),
            (taint['key'], taint['effect'], taint['hostname'],
             taint['rp_uuid'], taint['set_by']))
        # A pass without a new error ([discovery] aer_recovery_passes 1).
        svc.discover_and_report()
        priority, _, _, payload = self.next(
            'accelerator.device.health.change')
        self.assertEqual(('INFO', 'healthy'), (
            priority, self.data(payload, 'DevicePayload')['health']))
        _, _, _, payload = self.next('accelerator.device.untaint')
        self.assertEqual(taint['uuid'], self.data(
            payload, 'DeviceTaintPayload')['uuid'])

        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        svc.cleaner.clean_pending()
        priority, _, _, payload = self.next(
            'accelerator.device.cleaning.error')
        self.assertEqual('ERROR', priority)
        data = self.data(payload, 'DeviceCleaningPayload')
        self.assertEqual((GPU, 'command'), (data['address'], data['method']))
        self.assertIn('scrub failed', data['error'])

    def test_bind_and_delete_give_billing_its_period(self):
        svc = self.make_service()
        svc.discover_and_report()
        arq_uuid, _ = self.bind(svc, GPU)
        _, _, _, payload = self.next('accelerator.arq.bind.end')
        data = self.data(payload, 'ARQPayload')
        self.assertEqual((arq_uuid, 'Bound', 'PGPU', 'PCI', 'p1'), (
            data['uuid'], data['state'], data['resource_class'],
            data['attach_handle_type'], data['project_id']))
        self.call(svc, '/v2/accelerator_requests/%s' % arq_uuid,
                  headers=dict(test_lifecycle.V23,
                               **{'X-Service-Token': 'admin'}),
                  method='DELETE', status=204)
        _, _, _, payload = self.next('accelerator.arq.delete.end')
        deleted = self.data(payload, 'ARQPayload')
        # The same instance and device as bound: the end of the period.
        self.assertEqual(
            (data['instance_uuid'], data['attach_handle_uuid']),
            (deleted['instance_uuid'], deleted['attach_handle_uuid']))

    def test_bind_error_says_why_and_unbind_ends_the_period(self):
        svc = self.make_service()
        svc.discover_and_report()
        # Through the API, as Nova binds: a provider of no device here.
        failed, state = self.api_bind(svc, rp=test_lifecycle.rp_uuid(
            '0000:00:00.0'))
        self.assertEqual('BindFailed', state)
        priority, publisher, _, payload = self.next(
            'accelerator.arq.bind.error')
        self.assertEqual(('ERROR', 'accel-backend:%s' % HOST),
                         (priority, publisher))
        data = self.data(payload, 'ARQPayload')
        self.assertEqual((failed, 'BindFailed', 'no_device', None),
                         (data['uuid'], data['state'],
                          data['bind_failure_reason'],
                          data['attach_handle_uuid']))
        arq_uuid, _ = self.api_bind(svc, GPU)
        _, _, _, payload = self.next('accelerator.arq.bind.end')
        bound = self.data(payload, 'ARQPayload')
        self.assertIsNone(bound['bind_failure_reason'])
        # Its device is taken: the next bind says so.
        self.api_bind(svc, GPU)
        _, _, _, payload = self.next('accelerator.arq.bind.error')
        self.assertEqual('no_free_handle', self.data(
            payload, 'ARQPayload')['bind_failure_reason'])
        self.api_unbind(svc, arq_uuid)
        priority, _, _, payload = self.next('accelerator.arq.unbind.end')
        unbound = self.data(payload, 'ARQPayload')
        # The device it held until now, and its new state.
        self.assertEqual(
            ('INFO', arq_uuid, 'Unbound', bound['instance_uuid'],
             bound['attach_handle_uuid']),
            (priority, unbound['uuid'], unbound['state'],
             unbound['instance_uuid'], unbound['attach_handle_uuid']))
        self.assertIsNotNone(bound['attach_handle_uuid'])

    def test_audit_ends_the_period_of_a_deleted_instance(self):
        """The audit deletes the ARQs of an instance Nova deleted
        (``delete.end``, billing's period ends) and fails a Bound ARQ
        without a handle (``bind.error``)."""
        svc = self.make_service(self.make_conf(
            groups={'audit': {'grace_period': '0'}}))
        svc.discover_and_report()
        gone, _ = self.api_bind(svc, GPU)
        _, _, _, payload = self.next('accelerator.arq.bind.end')
        bound = self.data(payload, 'ARQPayload')
        broken, _ = self.api_bind(svc, '0000:65:00.0')
        with svc.db.transaction() as session:
            arq_obj.get(session, broken).attach_handle_id = None
        self.nova.codes[bound['instance_uuid']] = 404
        # Two audits (grace period 0): the first finds the instance gone,
        # the second confirms it (accel_backend.conductor.nova_orphans).
        first = svc.auditor.run()
        report = svc.auditor.run()
        self.assertEqual(([], [broken]),
                         (first.deleted_arqs, first.failed_arqs))
        self.assertEqual([gone], report.deleted_arqs)
        priority, publisher, _, payload = self.next(
            'accelerator.arq.delete.end')
        deleted = self.data(payload, 'ARQPayload')
        self.assertEqual(
            ('INFO', 'accel-backend:%s' % HOST, gone,
             bound['instance_uuid'], bound['attach_handle_uuid']),
            (priority, publisher, deleted['uuid'], deleted['instance_uuid'],
             deleted['attach_handle_uuid']))
        priority, _, _, payload = self.next('accelerator.arq.bind.error')
        failed = self.data(payload, 'ARQPayload')
        self.assertEqual(('ERROR', broken, 'BindFailed',
                          'bound_without_handle'),
                         (priority, failed['uuid'], failed['state'],
                          failed['bind_failure_reason']))

    def test_taint_and_untaint(self):
        svc = self.make_service()
        svc.discover_and_report()
        v25 = dict(test_lifecycle.ADMIN, **{
            'OpenStack-API-Version': 'accelerator 2.5',
            'X-User-Id': 'op-1'})
        (dep,) = [d for d in self.call(svc, '/v2/deployables', v25).json[
            'deployables'] if d['rp_uuid'] == test_lifecycle.rp_uuid(GPU)]
        path = '/v2/deployables/%s/taints' % dep['uuid']
        taint = self.call(svc, path, v25, 'POST', 201, {
            'key': 'maintenance', 'effect': 'NoSchedule'}).json
        for event_type in ('accelerator.device.taint',
                           'accelerator.device.untaint'):
            priority, _, _, payload = self.next(event_type)
            data = self.data(payload, 'DeviceTaintPayload')
            self.assertEqual(
                ('INFO', taint['uuid'], dep['uuid'], dep['rp_uuid'], HOST,
                 'maintenance', 'NoSchedule', 'op-1'),
                (priority, data['uuid'], data['deployable_uuid'],
                 data['rp_uuid'], data['hostname'], data['key'],
                 data['effect'], data['set_by']))
            if event_type.endswith('.taint'):
                self.call(svc, '%s/%s' % (path, taint['uuid']), v25,
                          'DELETE', 204)

    def test_off_without_a_driver(self):
        svc = self.make_service(self.make_conf(driver=None))
        self.assertFalse(svc.notifications.enabled)
        aer = os.path.join(self.root, GPU, 'aer_dev_fatal')
        svc.discover_and_report()
        with open(aer, 'w') as f:
            f.write(sysfs_tree.aer_fatal_text(2))
        svc.discover_and_report()
        self.assertRaises(queue.Empty, self.collector.received.get,
                          timeout=2)
