"""What a PATCH and a DELETE of many ARQs cost in SQL statements: the
number of round trips, not the number of ARQs (issue 15).

A ``Service`` over the recorded four-GPU server, its real WSGI app and
SQLite database; statements counted on its engine.
"""

import json

from oslo_utils import uuidutils
import sqlalchemy as sa
import webob

from accel_backend.objects import device_profile as dp_obj
from tests.unit.accel_backend import test_lifecycle as lifecycle

NOVA = dict(lifecycle.V23, **{'X-Service-Token': 'nova',
                              'Content-Type': 'application/json'})


class BatchCostTest(lifecycle.ServiceTestBase):

    def setUp(self):
        super().setUp()
        self.svc = self.make_service()
        self.svc.discover_and_report()
        with self.svc.db.transaction() as session:
            dp_obj.create(session, 'one', [{'resources:PGPU': '1'}])
            dp_obj.create(session, 'three', [{'resources:PGPU': '1'}] * 3)

    def request(self, method, path, body=None, status=200):
        req = webob.Request.blank(path, method=method, headers=NOVA)
        if body is not None:
            req.body = json.dumps(body).encode()
        resp = req.get_response(self.svc.app)
        self.assertEqual(status, resp.status_code, resp.text)
        return resp

    def counted(self, fn):
        count = []

        def listener(conn, cursor, statement, *args):
            count.append(statement)   # an executemany counts once
        sa.event.listen(self.svc.db.engine, 'before_cursor_execute',
                        listener)
        try:
            fn()
        finally:
            sa.event.remove(self.svc.db.engine, 'before_cursor_execute',
                            listener)
        return len(count)

    def boot(self, profile, gpus):
        """Create the profile's ARQs and PATCH-bind them to distinct GPUs;
        :returns: (instance, statements of the PATCH request, bind)."""
        arqs = self.request('POST', '/v2/accelerator_requests',
                            {'device_profile_name': profile},
                            status=201).json['arqs']
        instance = uuidutils.generate_uuid()
        patch = {a['uuid']: [
            {'path': '/hostname', 'op': 'add', 'value': lifecycle.COMPUTE},
            {'path': '/device_rp_uuid', 'op': 'add',
             'value': lifecycle.rp_uuid(gpu)},
            {'path': '/instance_uuid', 'op': 'add', 'value': instance}]
            for a, gpu in zip(arqs, gpus)}
        # The binder's part, measured apart: hold it until the PATCH
        # request has been counted.
        queued = []
        self.svc.dispatcher.bind = lambda started: queued.append(started)
        request = self.counted(lambda: self.request(
            'PATCH', '/v2/accelerator_requests', patch, status=202))
        uuids = [u for started in queued for us in started.values()
                 for u in us]
        bind = self.counted(lambda: self.svc.binder.bind_many(uuids))
        states = {self.request('GET', '/v2/accelerator_requests/%s' % u
                               ).json['state'] for u in uuids}
        self.assertEqual({'Bound'}, states)
        return instance, request, bind

    def test_patch_bind_and_delete_cost_the_same_for_three_arqs(self):
        # Released devices go to cleaning: each boot has its own GPUs.
        one, patch_one, bind_one = self.boot('one', ['0000:e3:00.0'])
        delete_one = self.counted(lambda: self.request(
            'DELETE', '/v2/accelerator_requests?instance=%s' % one,
            status=204))
        three, patch_three, bind_three = self.boot(
            'three', ['0000:17:00.0', '0000:65:00.0', '0000:ca:00.0'])
        delete_three = self.counted(lambda: self.request(
            'DELETE', '/v2/accelerator_requests?instance=%s' % three,
            status=204))
        self.assertEqual((patch_one, bind_one, delete_one),
                         (patch_three, bind_three, delete_three))
