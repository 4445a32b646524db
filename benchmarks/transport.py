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

"""Measure 8: the POST of ``accelerator-request-bound`` to Nova, the last
leg of every binding, through keystoneauth1 over requests' transport and
over accel_backend's (``accel_backend.keystone.ServiceSession``).

Both sides are what accel-backend builds from ``[nova]``
(``accel_backend.keystone.adapter_from_conf``: keystoneauth1's
``admin_token`` plugin here, microversion 2.82, the same JSON body), on
the session class each would use: ``EnvironmentOnceSession`` (requests +
urllib3, what accel-backend used before) or ``ServiceSession`` (kept-alive
``http.client`` connections for plain HTTP).  Both POST to the same Nova
stub process (``tools.fixtures.nova_stub``, keep-alive) on loopback;
samples alternate one by one, so both see the same machine.  Each sample
is a whole request: send, Nova's answer read and parsed (both sides wait
for the answer; neither answers before doing the work).
"""

import time
import uuid

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session

from accel_backend import keystone
from accel_backend.nova import notifier
from benchmarks import common

SAMPLES = {False: 1500, True: 200}
WARMUP = 100
SIDES = (('requests', keystone.EnvironmentOnceSession),
         ('service_session', keystone.ServiceSession))


def _adapter(session, url):
    auth = ks_loading.get_plugin_loader('admin_token').load_from_options(
        endpoint=url, token='admin')
    return ks_adapter.Adapter(ks_session.Session(auth=auth, session=session),
                              service_type='compute', endpoint_override=url)


def _post(adapter):
    body = {'events': [{'name': notifier.EVENT_NAME,
                        'server_uuid': str(uuid.uuid4()),
                        'tag': str(uuid.uuid4()), 'status': 'completed'}]}
    t0 = time.perf_counter()
    resp = adapter.post('/os-server-external-events', json=body,
                        raise_exc=False, microversion=notifier.MICROVERSION)
    resp.json()
    dt = time.perf_counter() - t0
    if resp.status_code != 200:
        raise RuntimeError('Nova stub answered %s' % resp.status_code)
    return dt


def measure(env, samples=None):
    """Time the event POST on both transports, alternating.

    :param env: ``benchmarks.run.Env`` with a started Nova stub
        (``env.stub``).
    :param samples: POSTs per side (default 1,500; 200 with ``--quick``).
    :returns: ``{'requests': summary, 'service_session': summary,
        'ratio_p50': requests / service_session, 'samples': n}`` (summaries
        in milliseconds, ``benchmarks.common.summary``).
    :raises RuntimeError: the stub does not answer 200.
    """
    n = samples or SAMPLES[env.quick]
    sides = []
    for name, cls in SIDES:
        session = cls()
        sides.append((name, session, _adapter(session, env.stub.endpoint)))
    times = {name: [] for name, _, _ in sides}
    try:
        for i in range(WARMUP + n):
            for name, _, adapter in sides:
                dt = _post(adapter)
                if i >= WARMUP:
                    times[name].append(dt)
    finally:
        for _, session, _ in sides:
            session.close()
    out = {name: common.summary(t) for name, t in times.items()}
    out['ratio_p50'] = common.ratio(out['requests']['p50'],
                                    out['service_session']['p50'])
    out['samples'] = n
    return out
