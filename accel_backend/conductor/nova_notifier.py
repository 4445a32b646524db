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

"""Deliver ``accelerator-request-bound`` events to Nova.

Wire contract (nova 34.0.0, ``nova/api/openstack/compute/
server_external_events.py`` and ``nova/compute/manager.py``):
``POST /os-server-external-events`` at compute microversion >= 2.82 with
``{"events": [{"name": "accelerator-request-bound", "server_uuid",
"tag": <arq uuid>, "status": "completed"|"failed"}]}``.  Nova answers 200,
or 207 with a ``code`` per event: 200 accepted, 404 instance gone (drop),
422 instance has no host yet (retry: the binding finished before Nova's
compute claimed the instance).
"""

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from accel_backend import metrics
from accel_backend import service_auth
from accel_common import arq_states

LOG = logging.getLogger(__name__)
MICROVERSION = '2.82'


def adapter_from_conf(conf, group='nova', auth=None):
    """keystoneauth1 Adapter for ``service_type=compute`` from ``conf``.

    :param auth: a keystoneauth1 auth plugin overriding the configured one.
    """
    return service_auth.adapter_from_conf(conf, group, 'compute', auth=auth)


class NovaNotifier:
    """Sends binding events; tells which ones Nova took.

    :param adapter: keystoneauth1 ``Adapter`` for the compute API.
    :param host: this host's name, the ``host`` label of the event
        delivery metrics.
    """

    def __init__(self, adapter, host=''):
        self.adapter = adapter
        self.host = host

    def send(self, events):
        """POST events in one request.

        :param events: list of ``(instance_uuid, arq_uuid, status)``.
        :returns: ``(done, retry)``: sets of ARQ UUIDs that need no more
            delivery (accepted, or instance gone) and that must be retried.
        """
        if not events:
            return set(), set()
        body = {'events': [{'name': arq_states.EVENT_NAME, 'server_uuid': inst,
                            'tag': arq, 'status': status}
                           for inst, arq, status in events]}
        tags = {arq for _, arq, _ in events}
        with metrics.timed(metrics.EVENT_SECONDS, host=self.host,
                           outcome='error') as labels:
            done, retry = self._post(body, tags, len(events))
            labels['outcome'] = 'retry' if retry else 'accepted'
        if retry:
            metrics.EVENT_RETRIES.labels(host=self.host).inc(len(retry))
        return done, retry

    def _post(self, body, tags, count):
        try:
            resp = self.adapter.post('/os-server-external-events',
                                     json=body, raise_exc=False,
                                     microversion=MICROVERSION)
        except ks_exc.ClientException as e:
            LOG.warning('Cannot reach Nova to deliver %d events: %s',
                        count, e)
            return set(), tags
        if resp.status_code not in (200, 207):
            LOG.warning('Nova refused events (%s): %s', resp.status_code,
                        resp.text[:300])
            if resp.status_code == 404:
                return tags, set()
            return set(), tags
        done, retry = set(), set()
        for ev in resp.json().get('events', []):
            code = ev.get('code', 200)
            if code == 200 or code == 404:
                done.add(ev['tag'])
                if code == 404:
                    LOG.info('Instance %s is gone; dropping event for ARQ '
                             '%s', ev['server_uuid'], ev['tag'])
            else:
                retry.add(ev['tag'])
        # Events Nova did not mention at all are retried.
        retry |= tags - done - retry
        return done, retry
