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

"""RPC between the ``nova-accel`` command and the compute drivers.

The bundle's compute drivers serve, on Nova's own message bus (Nova's
configured ``transport_url``, through ``nova.rpc``), the topic
``[nova_accel] hotplug_topic`` (default ``nova-accel-compute``) with
``server`` = the compute service's host, so a request reaches the one
compute that runs the instance.  Methods (version 1.1):

* ``attach_accelerators(ctxt, instance_uuid, device_profile)``
* ``detach_accelerators(ctxt, instance_uuid, device_profile)``
* ``replace_accelerator(ctxt, instance_uuid, arq_uuid)`` (1.1)

Each returns a dict (see :class:`nova_accel.hotplug.manager.HotplugManager`
and :class:`nova_accel.hotplug.replace.ReplaceManager`) and is
synchronous: the caller waits up to its timeout.
"""

# Nova's own options read below ([DEFAULT] arq_binding_timeout).
import nova.conf  # noqa: F401
from nova import context as nova_context
from nova import objects
from nova import rpc as nova_rpc
from oslo_log import log as logging
import oslo_messaging as messaging

from accel_common import rpc_server
import nova_accel.conf
from nova_accel.hotplug import exception

LOG = logging.getLogger(__name__)
CONF = nova_accel.conf.CONF

VERSION = '1.1'
NAMESPACE = 'nova_accel_hotplug'


def topic():
    """The RPC topic of hot-plug requests, ``[nova_accel]
    hotplug_topic`` (str); the server name is the compute host."""
    return CONF.nova_accel.hotplug_topic


class HotplugEndpoint(object):
    """RPC endpoint delegating to a :class:`HotplugManager`."""

    target = messaging.Target(namespace=NAMESPACE, version=VERSION)

    def __init__(self, manager):
        self.manager = manager

    @staticmethod
    def _run(func, *args):
        """Run ``func``; every failure leaves as a :class:`HotplugError`
        whose message names the original error (so the caller gets the same
        text whatever the transport: real drivers send it as a
        ``RemoteError``, the fake one as the exception itself)."""
        try:
            return func(*args)
        except exception.HotplugError:
            raise
        except Exception as exc:
            LOG.info('Hot-plug request failed', exc_info=True)
            raise exception.HotplugError(
                reason='%s: %s' % (type(exc).__name__, exc))

    @messaging.expected_exceptions(exception.HotplugError)
    def attach_accelerators(self, ctxt, instance_uuid, device_profile):
        """RPC ``attach_accelerators``: ``HotplugManager.attach``.

        :returns: its result dict.
        :raises HotplugError: any failure (expected by oslo.messaging: no
            server-side traceback is logged).
        """
        return self._run(self.manager.attach, ctxt, instance_uuid,
                         device_profile)

    @messaging.expected_exceptions(exception.HotplugError)
    def detach_accelerators(self, ctxt, instance_uuid, device_profile):
        """RPC ``detach_accelerators``: ``HotplugManager.detach``.

        :returns: its result dict.
        :raises HotplugError: any failure.
        """
        return self._run(self.manager.detach, ctxt, instance_uuid,
                         device_profile)

    @messaging.expected_exceptions(exception.HotplugError)
    def replace_accelerator(self, ctxt, instance_uuid, arq_uuid):
        """RPC ``replace_accelerator`` (1.1): ``ReplaceManager.replace``.

        :returns: its result dict.
        :raises HotplugError: any failure.
        """
        return self._run(self.manager.replace, ctxt, instance_uuid,
                         arq_uuid)


def start_server(host, manager):
    """Start serving hot-plug requests for ``host``; returns the server.

    :returns: an ``oslo_messaging`` RPC server, or None when
        ``[nova_accel] hotplug_enabled`` is off or Nova's RPC layer is not
        initialized (e.g. a driver built outside nova-compute).
    """
    if not CONF.nova_accel.hotplug_enabled:
        LOG.info('Accelerator hot-plug disabled ([nova_accel] '
                 'hotplug_enabled = false)')
        return None
    if nova_rpc.TRANSPORT is None:
        LOG.warning('Nova RPC is not initialized: accelerator hot-plug '
                    'requests will not be served on host %s', host)
        return None
    target = messaging.Target(topic=topic(), server=host)
    server = nova_rpc.get_server(target, [HotplugEndpoint(manager)])
    server.start()
    LOG.info('Serving accelerator hot-plug requests on topic %(t)s, '
             'server %(h)s', {'t': topic(), 'h': host})
    return server


def stop_server(server):
    """Stop a server returned by :func:`start_server` (None is fine)."""
    rpc_server.stop(server, 'accelerator hot-plug')


def instance_host(context, instance_uuid):
    """Return the compute host of an instance, from Nova's databases.

    Reads the instance mapping in the API database and the instance in its
    cell (as ``nova-manage`` does), so it needs ``[api_database]``.

    :raises InstanceNotHotpluggable: unknown, or not on a host.
    """
    from nova import exception as nova_exception
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            context, instance_uuid)
    except nova_exception.InstanceMappingNotFound:
        raise exception.InstanceNotHotpluggable(
            instance_uuid=instance_uuid, reason='no such instance')
    if mapping.cell_mapping is None:
        raise exception.InstanceNotHotpluggable(
            instance_uuid=instance_uuid, reason='it is not scheduled yet')
    with nova_context.target_cell(context, mapping.cell_mapping) as cctxt:
        try:
            instance = objects.Instance.get_by_uuid(cctxt, instance_uuid)
        except nova_exception.InstanceNotFound:
            raise exception.InstanceNotHotpluggable(
                instance_uuid=instance_uuid, reason='no such instance')
    if not instance.host:
        raise exception.InstanceNotHotpluggable(
            instance_uuid=instance_uuid, reason='it has no host')
    return instance.host


class HotplugAPI(object):
    """Client side: what ``nova-accel`` (and tests) call."""

    def __init__(self):
        target = messaging.Target(topic=topic(), version=VERSION,
                                  namespace=NAMESPACE)
        self.client = nova_rpc.get_client(target)

    @staticmethod
    def default_timeout():
        """``arq_binding_timeout`` plus Nova's ``rpc_response_timeout``."""
        return CONF.arq_binding_timeout + CONF.rpc_response_timeout

    def _call(self, ctxt, method, instance_uuid, device_profile=None,
              host=None, timeout=None, version=None, **kwargs):
        if host is None:
            host = instance_host(ctxt, instance_uuid)
        cctxt = self.client.prepare(server=host, version=version,
                                    timeout=timeout or self.default_timeout())
        if device_profile is not None:
            kwargs['device_profile'] = device_profile
        try:
            return cctxt.call(ctxt, method, instance_uuid=instance_uuid,
                              **kwargs)
        except exception.HotplugError:
            raise
        except messaging.RemoteError as exc:
            # The compute's HotplugError, as a real transport delivers it.
            raise exception.HotplugError(message=exc.value)
        except messaging.MessagingTimeout:
            raise exception.HotplugError(
                reason='no answer from host %s within %s seconds (the '
                       'operation may still complete there)' % (
                           host, timeout or self.default_timeout()))

    def attach(self, ctxt, instance_uuid, device_profile, host=None,
               timeout=None):
        """Hot-add ``device_profile``'s accelerators; returns the summary."""
        return self._call(ctxt, 'attach_accelerators', instance_uuid,
                          device_profile, host=host, timeout=timeout)

    def detach(self, ctxt, instance_uuid, device_profile, host=None,
               timeout=None):
        """Hot-remove one attach of ``device_profile``."""
        return self._call(ctxt, 'detach_accelerators', instance_uuid,
                          device_profile, host=host, timeout=timeout)

    def replace(self, ctxt, instance_uuid, arq_uuid, host=None,
                timeout=None):
        """Give the instance another device for its Bound ARQ
        ``arq_uuid``, on its host; returns the summary (compute at RPC
        1.1 or later)."""
        return self._call(ctxt, 'replace_accelerator', instance_uuid,
                          host=host, timeout=timeout, version='1.1',
                          arq_uuid=arq_uuid)
