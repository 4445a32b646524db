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

"""The random mix of ARQ requests the concurrency tests send
(``test_pg_concurrency``): client threads, each with its own
``requests.Session``, on a shared pool of ARQs and a few shared
instances, so that many requests contend for the same ARQ rows and the
same devices:

    create ARQ; bind 1-3 ARQs in one PATCH (keys in random order) to a
    random one of the GPUs; unbind 1-2 ARQs; delete ?arqs= (1-3, random
    order); delete ?instance=; show an ARQ

Accepted answers: the intended one, or 404/409 where another thread got
there first (ARQ deleted, ARQ not in a bindable state).  Anything else,
and every request that got no answer, is recorded in ``errors``.
"""

import collections
import random
import threading
import time

import requests

from tests import waiting
from tools.fixtures import accel_backend as accel_fx

#: The requests' path.
ARQS = '/v2/accelerator_requests'
#: Operations and their weights (the first while the pool is small).
OPERATIONS = ('create', 'bind', 'unbind', 'delete_arqs', 'delete_instance',
              'show')
#: Pool size under which creates are favoured and deletes are not.
SMALL_POOL = 40


class Mix:
    """Send the mix from ``threads`` threads for ``seconds`` seconds.

    :param roots: API base URLs (``http://127.0.0.1:<port>``); thread
        ``i`` calls ``roots[i % len(roots)]``.
    :param host: the ARQs' ``hostname`` in bind PATCHes (str).
    :param rps: resource provider UUIDs of the GPUs to bind to (list).
    :param instances: instance UUIDs to bind to and delete by (list).
    :param seconds: how long each thread sends (float).
    :param client_timeout: seconds a request may take before it counts as
        unanswered (a worker hung, e.g. by a deadlock).
    :ivar statuses: ``Counter`` of ``(operation, HTTP status or 'error')``.
    :ivar errors: ``(operation, method, path, status, text)`` of each
        answer not accepted, ``(operation, method, path, repr)`` of each
        request that got none.
    """

    def __init__(self, roots, host, rps, instances, seconds,
                 client_timeout):
        self.roots, self.host = list(roots), host
        self.rps, self.instances = list(rps), list(instances)
        self.seconds, self.client_timeout = seconds, client_timeout
        self.lock = threading.Lock()
        self.pool = []          # ARQ UUIDs believed to exist
        self.statuses = collections.Counter()
        self.errors = []

    def run(self, threads):
        """Run ``threads`` threads and join them (each for the duration
        plus four client timeouts).

        :returns: ``(seconds it took, names of threads still alive)``.
        """
        self.deadline = time.monotonic() + self.seconds
        elapsed, started = waiting.run_threads(
            self._worker, [(i,) for i in range(threads)],
            self.seconds + 4 * self.client_timeout)
        return elapsed, [t.name for t in started if t.is_alive()]

    def server_errors(self):
        """How many answers were 5xx (int)."""
        return sum(v for (_, s), v in self.statuses.items()
                   if isinstance(s, int) and s >= 500)

    def unanswered(self):
        """How many requests got no answer (int)."""
        return len([e for e in self.errors if len(e) == 4])

    def _call(self, session, root, name, method, path, allowed, body=None):
        try:
            resp = session.request(method, root + path, json=body,
                                   headers=accel_fx.NOVA_HEADERS,
                                   timeout=self.client_timeout)
        except requests.RequestException as e:
            with self.lock:
                self.statuses[(name, 'error')] += 1
                self.errors.append((name, method, path, repr(e)))
            return None
        with self.lock:
            self.statuses[(name, resp.status_code)] += 1
            if resp.status_code not in allowed:
                self.errors.append((name, method, path, resp.status_code,
                                    resp.text[:300]))
        return resp

    def _pick(self, rnd, n):
        with self.lock:
            if not self.pool:
                return []
            return rnd.sample(self.pool, min(n, len(self.pool)))

    def _forget(self, uuids):
        with self.lock:
            for u in uuids:
                if u in self.pool:
                    self.pool.remove(u)

    def _worker(self, index):
        rnd = random.Random(index)
        root = self.roots[index % len(self.roots)]
        session = requests.Session()
        while time.monotonic() < self.deadline:
            with self.lock:
                small = len(self.pool) < SMALL_POOL
            op = rnd.choices(OPERATIONS, [4 if small else 1, 5, 2,
                                          2 if small else 4, 1, 1])[0]
            getattr(self, '_' + op)(session, root, rnd, op)

    def _create(self, session, root, rnd, op):
        resp = self._call(session, root, op, 'POST', ARQS, (201,),
                          {'device_profile_name': 'gpu'})
        if resp is not None and resp.status_code == 201:
            with self.lock:
                self.pool.extend(a['uuid'] for a in resp.json()['arqs'])

    def _bind(self, session, root, rnd, op):
        arqs = self._pick(rnd, rnd.randint(1, 3))
        if not arqs:
            return
        instance = rnd.choice(self.instances)
        body = {a: [
            {'op': 'add', 'path': '/hostname', 'value': self.host},
            {'op': 'add', 'path': '/device_rp_uuid',
             'value': rnd.choice(self.rps)},
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}]
            for a in arqs}
        self._call(session, root, op, 'PATCH', ARQS, (202, 404, 409), body)

    def _unbind(self, session, root, rnd, op):
        arqs = self._pick(rnd, rnd.randint(1, 2))
        if not arqs:
            return
        body = {a: [{'op': 'remove', 'path': p} for p in
                    ('/hostname', '/device_rp_uuid', '/instance_uuid')]
                for a in arqs}
        self._call(session, root, op, 'PATCH', ARQS, (202, 404, 409), body)

    def _delete_arqs(self, session, root, rnd, op):
        arqs = self._pick(rnd, rnd.randint(1, 3))
        if not arqs:
            return
        # 404 (and nothing deleted) when another thread deleted one of
        # them first: ?arqs= is not idempotent, as in Cyborg 17.
        resp = self._call(session, root, op, 'DELETE',
                          ARQS + '?arqs=' + ','.join(arqs), (204, 404))
        if resp is not None and resp.status_code == 204:
            self._forget(arqs)

    def _delete_instance(self, session, root, rnd, op):
        # The pool learns of these deletes from 404s.
        self._call(session, root, op, 'DELETE',
                   ARQS + '?instance=' + rnd.choice(self.instances), (204,))

    def _show(self, session, root, rnd, op):
        arqs = self._pick(rnd, 1)
        if not arqs:
            return
        resp = self._call(session, root, op, 'GET', ARQS + '/' + arqs[0],
                          (200, 404))
        if resp is not None and resp.status_code == 404:
            self._forget(arqs)
