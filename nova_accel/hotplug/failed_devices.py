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

"""The compute node's failed-device watch (``[nova_accel]
replace_failed``, off by default).

Every ``replace_failed_interval`` seconds, in a thread of nova-compute:

1. ``GET /v2/deployables?taint_effect=NoExecute`` at accelerator
   microversion 2.6 (one call; accel_backend's extension, see its
   ``doc/cyborg-deviations.md``): the providers of the devices to
   replace, cloud-wide (usually none: the look ends there);
2. the providers of this compute node's tree in Placement (one call),
   to keep this host's;
3. for each active instance of this host, its ARQs; each Bound ARQ on
   one of those providers is replaced
   (``replace.ReplaceManager.replace``: same host, same request group).

Before that, every look resumes the replacements a crash of nova-compute
interrupted (a plan in the instance's ``system_metadata``,
``replace.plans``).

A replacement that fails (no free device: the guest keeps its device
and the instance gets a fault) is tried again after ``RETRY_LOOKS``
looks, not at every one.
"""

import threading
import time

from nova.compute import vm_states
from nova import context as nova_context
from nova import objects
from oslo_log import log as logging

from accel_common import arq_states
from accel_common import taints
import nova_accel.conf
from nova_accel.cyborg_client import transport
from nova_accel.hotplug import clients
from nova_accel.hotplug import exception
from nova_accel.hotplug import replace

LOG = logging.getLogger(__name__)
CONF = nova_accel.conf.CONF

#: The accelerator microversion of ``?taint_effect=``.
TAINT_EFFECT_VERSION = 'accelerator 2.6'
#: Looks after which a failed replacement is tried again.
RETRY_LOOKS = 20


def no_execute_providers(context):
    """The resource providers (set of UUIDs) of the deployables tainted
    ``NoExecute``, cloud-wide.

    :param context: a Nova request context (its token is used only when
        ``[service_user]`` has no credentials, ``clients.accel_auth``).
    :raises exception.HotplugError: the accelerator service refused (an
        older one: no microversion 2.6).
    :raises: the accelerator client's transport errors.
    """
    adapter = transport.conf_adapter(clients.accel_auth(context))
    resp = transport.request(
        adapter, 'GET', '/deployables',
        params={'taint_effect': taints.NO_EXECUTE},
        headers={'OpenStack-API-Version': TAINT_EFFECT_VERSION})
    if resp.status_code != 200:
        raise exception.HotplugError(
            reason='GET /v2/deployables?taint_effect=NoExecute answered %s '
                   '(an accelerator service older than microversion 2.6?)'
                   % resp.status_code)
    return {d['rp_uuid'] for d in resp.json().get('deployables', [])
            if d.get('rp_uuid')}


class FailedDeviceWatch(object):
    """Replaces this host's ``NoExecute``-tainted devices under their
    guests (see the module docstring).

    :param manager: a ``replace.ReplaceManager`` of this host.
    :param host: the compute host's name (str).
    :param interval: seconds between two looks (float).
    """

    def __init__(self, manager, host, interval):
        self.manager = manager
        self.host = host
        self.interval = interval
        self._stop = threading.Event()
        self._thread = None
        self._looks = 0
        #: ``{(arq uuid, rp uuid): look of the failure}``.
        self._failed = {}

    def start(self):
        """Start the watch thread; returns self."""
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='accel-failed-device-watch')
        self._thread.start()
        LOG.info('Replacing NoExecute-tainted accelerators under their '
                 'guests every %ss', self.interval)
        return self

    def stop(self):
        """Stop the thread (waits for the look in progress)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def _run(self):
        while not self._stop.wait(self.interval):
            try:
                self.look()
            except Exception:
                LOG.exception('Looking for failed accelerators failed; '
                              'trying again in %ss', self.interval)

    def _host_providers(self, context):
        node = objects.ComputeNodeList.get_all_by_host(context, self.host)
        found = set()
        for cn in node:
            resp = self.manager.driver.virtapi.reportclient.get(
                '/resource_providers?in_tree=%s' % cn.uuid, version='1.14')
            if resp.status_code == 200:
                found |= {rp['uuid'] for rp in
                          resp.json()['resource_providers']}
        return found

    def look(self):
        """One look: replace what is to be replaced now.

        :returns: list of ``(instance uuid, arq uuid, result dict or the
            exception)`` of the replacements tried.
        """
        self._looks += 1
        context = nova_context.get_admin_context()
        instances = [i for i in objects.InstanceList.get_by_host(
            context, self.host, expected_attrs=['system_metadata'])
            if i.vm_state == vm_states.ACTIVE and not i.task_state]
        tried = [self._replace(context, inst, {'uuid': arq_uuid},
                               (arq_uuid, plan['old']))
                 for inst in instances
                 for arq_uuid, plan in sorted(replace.plans(inst).items())
                 if self._due((arq_uuid, plan['old']))]
        tainted = no_execute_providers(context)
        if not tainted:
            return tried
        mine = tainted & self._host_providers(context)
        if not mine:
            return tried
        client = clients.accel_client(context)
        done = {arq for _, arq, _ in tried}
        for inst in instances:
            for arq in client.get_arqs_for_instance(inst.uuid):
                if arq['uuid'] in done:
                    continue
                key = (arq['uuid'], arq.get('device_rp_uuid'))
                if (arq.get('state') != arq_states.BOUND or
                        key[1] not in mine or not self._due(key)):
                    continue
                tried.append(self._replace(context, inst, arq, key))
        return tried

    def _due(self, key):
        """Whether ``(arq uuid, rp uuid)`` may be tried at this look: it
        never failed, or ``RETRY_LOOKS`` looks ago."""
        return self._looks - self._failed.get(key, -RETRY_LOOKS) >= \
            RETRY_LOOKS

    def _replace(self, context, inst, arq, key):
        started = time.monotonic()
        try:
            result = self.manager.replace(context, inst.uuid, arq['uuid'])
        except Exception as exc:
            self._failed[key] = self._looks
            LOG.error('Could not replace the failed device %(rp)s of ARQ '
                      '%(arq)s: %(exc)s; trying again in %(n)d looks',
                      {'rp': key[1], 'arq': arq['uuid'], 'exc': exc,
                       'n': RETRY_LOOKS}, instance=inst)
            return inst.uuid, arq['uuid'], exc
        self._failed.pop(key, None)
        LOG.warning('Replaced the failed device %(old)s by %(new)s in '
                    '%(s).1fs', {'old': result['old'], 'new': result['new'],
                                 's': time.monotonic() - started},
                    instance=inst)
        return inst.uuid, arq['uuid'], result
