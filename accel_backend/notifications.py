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

"""Versioned notifications over oslo.messaging's notifier, as Nova's.

Off unless ``[oslo_messaging_notifications] driver`` is set (e.g.
``messagingv2``); then they go to ``[oslo_messaging_notifications]
topics`` (``notifications``) on its ``transport_url`` (default: ``[DEFAULT]
transport_url``), with ``publisher_id`` ``accel-backend:<host>``.  Each
payload is a versioned object in the shape of Nova's
(``nova/notifications/objects/base.py``, Nova 34)::

    {"accel_object.name": "ARQPayload",
     "accel_object.namespace": "accel_backend",
     "accel_object.version": "1.1",
     "accel_object.data": {...}}

A consumer keys on ``event_type``; a new field bumps the payload's minor
version (``VERSIONS``), a changed or removed one the major.  Event types
(``PAYLOADS`` lists the fields):

* ``accelerator.arq.bind.end`` (INFO): an ARQ is ``Bound``: this instance
  now holds this device (attach handle);
* ``accelerator.arq.bind.error`` (ERROR): an ARQ ended ``BindFailed``
  (by the binder, or the audit), ``bind_failure_reason`` says why
  (``accel_backend.conductor.failure.REASONS``);
* ``accelerator.arq.unbind.end`` (INFO): a bound ARQ was unbound (its
  device released; ``state`` ``Unbound``, the handle it held);
* ``accelerator.arq.delete.end`` (INFO): an ARQ was deleted, by the API
  or by the audit when Nova had deleted its instance (its device, if
  bound, is released; ``state`` the one it was deleted in): with
  ``bind.end`` this gives billing the period an instance held a device;
* ``accelerator.device.health.change`` (INFO, WARN when unhealthy): the
  discovery verdict on a device changed;
* ``accelerator.device.cleaning.error`` (ERROR): cleaning a released
  device failed; it stays out of service;
* ``accelerator.device.taint`` and ``accelerator.device.untaint`` (INFO):
  an operator set (or replaced) or removed a taint of a deployable or of
  one function of a pool (``objects.taint``; API microversion 2.5).

Notifications are sent after the change they report is committed; a
failure to send is logged and never undoes or blocks the change.
"""

from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts

from accel_backend import transports

LOG = logging.getLogger(__name__)
NAMESPACE = 'accel_backend'
#: Fields of each payload, at its version in ``VERSIONS``.
PAYLOADS = {
    'ARQPayload': ('uuid', 'state', 'device_profile_name',
                   'device_profile_group_id', 'hostname', 'device_rp_uuid',
                   'instance_uuid', 'project_id', 'attach_handle_uuid',
                   'attach_handle_type', 'attach_handle_info',
                   'resource_class', 'bind_failure_reason'),
    'DevicePayload': ('uuid', 'hostname', 'address', 'type', 'vendor',
                      'model', 'status', 'health', 'health_reason',
                      'previous_health'),
    'DeviceCleaningPayload': ('uuid', 'hostname', 'address', 'type',
                              'vendor', 'model', 'attach_handle_uuid',
                              'method', 'error'),
    'DeviceTaintPayload': ('uuid', 'deployable_uuid', 'rp_uuid',
                           'hostname', 'function', 'key', 'value',
                           'effect', 'reason', 'set_by', 'time_added'),
}
#: Version of each payload.  ARQPayload 1.1: ``bind_failure_reason``
#: (None but in ``accelerator.arq.bind.error``).
VERSIONS = {'ARQPayload': '1.1', 'DevicePayload': '1.0',
            'DeviceCleaningPayload': '1.0', 'DeviceTaintPayload': '1.0'}


def payload(name, data):
    """The versioned envelope of payload ``name`` (a key of
    ``PAYLOADS``).

    :param data: dict with exactly the payload's fields.
    :raises ValueError: a missing or unknown field (a programming error:
        the payload's version would lie).
    """
    if set(data) != set(PAYLOADS[name]):
        raise ValueError('%s fields: got %s, want %s' % (
            name, sorted(data), sorted(PAYLOADS[name])))
    return {'accel_object.name': name,
            'accel_object.namespace': NAMESPACE,
            'accel_object.version': VERSIONS[name],
            'accel_object.data': data}


def arq_data(arq):
    """The ``ARQPayload`` fields of ``models.ARQ`` ``arq`` (loaded);
    ``bind_failure_reason`` None (``conductor.failure.record`` sets it)."""
    handle = arq.attach_handle
    return {
        'uuid': arq.uuid, 'state': arq.state,
        'device_profile_name': arq.device_profile_name,
        'device_profile_group_id': arq.device_profile_group_id,
        'hostname': arq.hostname, 'device_rp_uuid': arq.device_rp_uuid,
        'instance_uuid': arq.instance_uuid, 'project_id': arq.project_id,
        'attach_handle_uuid': handle.uuid if handle else None,
        'attach_handle_type': handle.attach_type if handle else None,
        'attach_handle_info': dict(handle.attach_info) if handle else None,
        'resource_class': resource_class(arq), 'bind_failure_reason': None}


def resource_class(arq):
    """The resource class an ARQ's device profile group asks for, or
    None."""
    return next((k[len('resources:'):] for k in (
        arq.device_profile_group or {}) if k.startswith('resources:')),
        None)


class Notifications:
    """The notifier of one service.

    :param conf: accel_backend ``ConfigOpts``.
    :param transport: a notification transport to use instead of one
        built from the configuration (tests).
    """

    def __init__(self, conf, transport=None):
        self._notifier = self._transport = None
        self._owns = transport is None
        for group, opts in messaging_opts.list_opts():
            if group == 'oslo_messaging_notifications':
                conf.register_opts(opts, group=group)
        if not conf.oslo_messaging_notifications.driver:
            return
        transports.register_global_only_opts(conf)
        if transport is None:
            transport = messaging.get_notification_transport(conf)
        self._transport = transport
        self._notifier = messaging.Notifier(
            transport, publisher_id='accel-backend:%s' % conf.host)

    @property
    def enabled(self):
        """True when a driver is configured."""
        return self._notifier is not None

    def emit(self, priority, event_type, name, data):
        """Send one notification (no-op when disabled; a failure is
        logged, never raised).

        :param priority: ``info``, ``warn`` or ``error``.
        :param event_type: e.g. ``accelerator.arq.bind.end``.
        :param name: the payload's name (``PAYLOADS``).
        :param data: the payload's fields (dict).
        """
        if self._notifier is None:
            return
        body = payload(name, data)
        try:
            getattr(self._notifier, priority)({}, event_type, body)
        except Exception as e:
            LOG.warning('Cannot send notification %s: %s', event_type, e)

    def arq(self, event_type, data, priority='info'):
        """Notify ``event_type`` about an ARQ.

        :param data: ``arq_data(arq)``, taken while the row was loaded
            (before a delete released its attach handle).
        """
        self.emit(priority, event_type, 'ARQPayload', data)

    def device_health(self, change):
        """Notify ``accelerator.device.health.change``.

        :param change: dict with the ``DevicePayload`` fields.
        """
        self.emit('warn' if change['health'] != 'healthy' else 'info',
                  'accelerator.device.health.change', 'DevicePayload',
                  change)

    def cleaning_error(self, data):
        """Notify ``accelerator.device.cleaning.error``.

        :param data: dict with the ``DeviceCleaningPayload`` fields.
        """
        self.emit('error', 'accelerator.device.cleaning.error',
                  'DeviceCleaningPayload', data)

    def device_taint(self, event_type, data):
        """Notify ``accelerator.device.taint`` or ``.untaint``.

        :param event_type: one of those two (str).
        :param data: dict with the ``DeviceTaintPayload`` fields
            (``objects.taint.payload``).
        """
        self.emit('info', event_type, 'DeviceTaintPayload', data)

    def close(self):
        """Release the notification transport when this object built it
        (``transport.cleanup()``: its broker connections).  A transport
        passed in is its owner's to clean up; disabled notifications have
        none.  Idempotent; call it when the service stops (a notification
        sent after it is not delivered: ``emit`` logs a warning)."""
        if self._owns and self._transport is not None:
            self._transport.cleanup()
            self._transport = None
