"""Versioned notifications through a real RabbitMQ: a service of ours
sends them (``[oslo_messaging_notifications] driver = messagingv2``) and an
oslo.messaging notification listener, as Ceilometer runs one, receives
them from the broker."""

import os
import queue

import oslo_messaging as messaging

from accel_backend import notifications
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
        self.rabbit = self.useFixture(rabbitmq.RabbitMQServer())
        self.collector = Collector()
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

    def make_conf(self, cleaning=None, driver='messagingv2', **discovery):
        groups = {}
        if driver and hasattr(self, 'rabbit'):
            groups['oslo_messaging_notifications'] = {
                'driver': driver, 'transport_url': self.rabbit.url}
        return super().make_conf(cleaning=cleaning, groups=groups,
                                 **discovery)

    def next(self, event_type):
        """The next notification of ``event_type`` (others are skipped)."""
        while True:
            got = self.collector.received.get(timeout=WAIT)
            if got[2] == event_type:
                return got

    def data(self, payload, name):
        self.assertEqual(
            (name, 'accel_backend', notifications.VERSION),
            (payload['accel_object.name'],
             payload['accel_object.namespace'],
             payload['accel_object.version']))
        self.assertEqual(set(notifications.PAYLOADS[name]),
                         set(payload['accel_object.data']))
        return payload['accel_object.data']

    def test_health_change_and_cleaning_error(self):
        svc = self.make_service(self.make_conf(cleaning={
            'methods': 'nvidia_gpu:command',
            'command': "sh -c 'echo scrub failed >&2; exit 3'"}))
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
        self.assertIn('2 fatal PCIe AER errors', data['health_reason'])
        with open(aer, 'w') as f:
            f.write(sysfs_tree.aer_fatal_text(0))
        svc.discover_and_report()
        priority, _, _, payload = self.next(
            'accelerator.device.health.change')
        self.assertEqual(('INFO', 'healthy'), (
            priority, self.data(payload, 'DevicePayload')['health']))

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
