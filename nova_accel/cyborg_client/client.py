#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""Keystoneauth client of the accelerator (Cyborg v2) API.

Implements the wire contract Nova 34's in-tree client expects (nova 34.0.0,
``nova/accelerator/cyborg.py``) and the "Accelerator Requests" / ``match-rp``
sections of the nova-cyborg-interaction spec. Every failure is raised as a
typed exception of :mod:`nova_accel.cyborg_client.exception`; nothing returns
``(resp, msg)`` tuples.  The session, the sending of a request and the
reading of error bodies are :mod:`nova_accel.cyborg_client.transport`'s.
"""

from urllib import parse

from oslo_log import log as logging

from accel_common import arq_states
from nova_accel.cyborg_client import exception
from nova_accel.cyborg_client import request_groups
from nova_accel.cyborg_client import transport

LOG = logging.getLogger(__name__)

SERVICE_TYPE = 'accelerator'
# ARQ states Nova treats as "binding finished" (nova/accelerator/cyborg.py).
RESOLVED_STATES = frozenset(arq_states.RESOLVED_STATES)
# Cyborg microversion 2.1 adds project_id to the bind PATCH (cyborg 17.0.0,
# cyborg/api/controllers/v2/versions.py).
PROJECT_ID_MICROVERSION = '2.1'
BIND_FIELDS = ('hostname', 'device_rp_uuid', 'instance_uuid')
OPTIONAL_BIND_FIELDS = ('project_id',)


class AcceleratorClient(object):
    """Client of the accelerator (Cyborg v2) API over a keystoneauth adapter.

    :param adapter: ``keystoneauth1.adapter.Adapter`` whose endpoint is the
        service's ``/v2`` root (service type ``accelerator``); paths used
        here are relative (``/device_profiles``, ``/accelerator_requests``).

    No ``OpenStack-API-Version`` header is sent (microversion 2.0, as Nova
    does) except on a bind PATCH that carries ``project_id`` (2.1).
    """

    DEVICE_PROFILES = '/device_profiles'
    ARQS = '/accelerator_requests'

    def __init__(self, adapter):
        self._adapter = adapter

    @classmethod
    def from_context(cls, context):
        """Build a client for a Nova request context, as Nova does.

        Auth: ``nova.service_auth.get_service_user_token_auth_plugin`` (the
        user's token, plus the service token when
        ``[service_user] send_service_user_token`` is set). Session and
        adapter: keystoneauth options of Nova's ``[cyborg]`` group
        (``service_type`` defaults to ``accelerator``; ``endpoint_override``
        etc. are honoured). Nothing is contacted until the first call.

        :param context: ``nova.context.RequestContext``.
        :returns: AcceleratorClient.
        """
        from nova import service_auth

        return cls.for_auth(
            service_auth.get_service_user_token_auth_plugin(context))

    @classmethod
    def for_auth(cls, auth):
        """Build a client sending ``auth`` (a keystoneauth1 auth plugin)
        over the process's one session, its adapter from Nova's
        ``[cyborg]`` options (:func:`transport.conf_adapter`).

        :returns: AcceleratorClient.
        """
        return cls(transport.conf_adapter(auth))

    def _request(self, method, path, **kwargs):
        """``transport.request`` over this client's adapter."""
        return transport.request(self._adapter, method, path, **kwargs)

    # -- device profiles ---------------------------------------------------

    def get_device_profile(self, name):
        """Return the one device profile named ``name``.

        Wire: ``GET /v2/device_profiles?name=<name>`` -> 200
        ``{"device_profiles": [...]}``; exactly one profile must match
        (nova/accelerator/cyborg.py). Profiles whose ``name`` differs are
        ignored, in case a server does not filter.

        :param name: non-empty str.
        :returns: dict ``{"name", "uuid", "groups": [group dict], ...}``.
        :raises: DeviceProfileNotFound (none matched, or 404),
            DeviceProfileAmbiguous (more than one), InvalidDeviceProfile
            (empty name), AcceleratorServiceUnavailable,
            AcceleratorClientError (other statuses, malformed body).
        """
        if not name or not isinstance(name, str):
            raise exception.InvalidDeviceProfile(
                name=repr(name), reason='a device profile name is required')
        LOG.debug('Getting device profile %s', name)
        resp = self._request('GET', self.DEVICE_PROFILES,
                             params={'name': name})
        if resp.status_code == 404:
            raise transport.failure(resp, exception.DeviceProfileNotFound,
                                    name=name)
        if resp.status_code != 200:
            raise transport.failure(resp, exception.AcceleratorClientError,
                                    reason='GET device profile %s' % name)
        profiles = transport.json_body(resp, 'device profile list').get(
            'device_profiles')
        if not isinstance(profiles, list):
            raise exception.AcceleratorClientError(
                reason='device profile list lacks "device_profiles"',
                status_code=resp.status_code)
        matches = [p for p in profiles
                   if isinstance(p, dict) and p.get('name') == name]
        if not matches:
            raise exception.DeviceProfileNotFound(name=name)
        if len(matches) > 1:
            raise exception.DeviceProfileAmbiguous(name=name,
                                                   count=len(matches))
        return matches[0]

    def get_request_groups(self, name, owner=None):
        """Return the Nova request groups of device profile ``name``.

        Spec "Updating the Request Spec": one ``RequestGroup`` per profile
        group, requester_id ``device_profile_<N>[owner]``.

        :param name: device profile name.
        :param owner: optional owner (port UUID) appended to requester_ids.
        :returns: list of ``nova.objects.RequestGroup``.
        :raises: as :meth:`get_device_profile`, plus InvalidDeviceProfile
            for malformed groups.
        """
        profile = self.get_device_profile(name)
        return request_groups.device_profile_request_groups(
            profile.get('groups'), owner=owner, name=name)

    # -- accelerator requests ----------------------------------------------

    def create_arqs(self, device_profile_name):
        """Create the ARQs of a device profile.

        Wire: ``POST /v2/accelerator_requests``
        ``{"device_profile_name": name}`` -> 201 ``{"arqs": [...]}``, one
        ARQ per requested unit (spec "Accelerator Requests").

        :param device_profile_name: str.
        :returns: non-empty list of ARQ dicts.
        :raises: ARQCreateFailed (4xx, or a 2xx without a non-empty ARQ
            list), AcceleratorServiceUnavailable.
        """
        LOG.info('Creating accelerator requests for device profile %s',
                 device_profile_name)
        resp = self._request('POST', self.ARQS,
                             json={'device_profile_name':
                                   device_profile_name})
        if not 200 <= resp.status_code < 300:
            raise transport.failure(resp, exception.ARQCreateFailed,
                                    name=device_profile_name)
        try:
            arqs = resp.json().get('arqs')
        except (ValueError, AttributeError):
            arqs = None
        if (not isinstance(arqs, list) or not arqs or
                not all(isinstance(a, dict) and a.get('uuid')
                        for a in arqs)):
            raise exception.ARQCreateFailed(
                name=device_profile_name,
                reason='expected a non-empty "arqs" list, got %r' %
                       resp.text[:200],
                status_code=resp.status_code)
        LOG.debug('Created accelerator requests %s',
                  ','.join(a['uuid'] for a in arqs))
        return arqs

    def create_arqs_and_match(self, device_profile_name, rg_rp_map,
                              owner=None):
        """Create ARQs and set each one's ``device_rp_uuid``.

        Spec ``match-rp``: see
        :func:`request_groups.match_arqs_to_providers`. When matching fails
        the just-created ARQs are deleted (best effort) before raising.

        :param device_profile_name: str.
        :param rg_rp_map: ``{requester_id: [rp_uuid, ...]}`` as
            ``RequestSpec.get_request_group_mapping()`` returns.
        :param owner: optional owner used for the request groups.
        :returns: list of ARQ dicts, each with ``device_rp_uuid`` set.
        :raises: as :meth:`create_arqs`, plus ARQMatchError.
        """
        arqs = self.create_arqs(device_profile_name)
        try:
            mapping = request_groups.match_arqs_to_providers(
                arqs, rg_rp_map, owner=owner)
        except exception.ARQMatchError:
            LOG.error('Could not match accelerator requests of device '
                      'profile %s to resource providers; deleting them',
                      device_profile_name)
            try:
                self.delete_arqs([a['uuid'] for a in arqs])
            except exception.AcceleratorClientError as exc:
                LOG.warning('Cleanup of unmatched ARQs failed: %s', exc)
            raise
        for arq in arqs:
            arq['device_rp_uuid'] = mapping[arq['uuid']]
        return arqs

    def bind_arqs(self, bindings):
        """Bind ARQs to a host, device RP and instance.

        Wire: ``PATCH /v2/accelerator_requests`` with body ``{arq_uuid:
        [{"path": "/hostname", "op": "add", "value": h}, {"path":
        "/device_rp_uuid", ...}, {"path": "/instance_uuid", ...}, ({"path":
        "/project_id", ...})], ...}`` (RFC 6902, nova/accelerator/cyborg.py) ->
        202. A ``project_id`` binding is sent with microversion 2.1.

        :param bindings: ``{arq_uuid: {"hostname": str, "device_rp_uuid":
            str, "instance_uuid": str, optional "project_id": str}}``;
            ``hostname`` is the compute node's hypervisor_hostname. An empty
            dict sends nothing.
        :raises: ARQBindFailed (a binding lacks a field or has an unknown
            one, or the service refused with 4xx),
            AcceleratorServiceUnavailable.
        """
        if not bindings:
            return
        arq_uuids = sorted(bindings)
        patch = {}
        use_project = False
        for arq_uuid, binding in bindings.items():
            binding = binding or {}
            missing = [f for f in BIND_FIELDS if not binding.get(f)]
            unknown = set(binding) - set(BIND_FIELDS + OPTIONAL_BIND_FIELDS)
            if missing or unknown:
                raise exception.ARQBindFailed(
                    arqs=','.join(arq_uuids),
                    reason='binding of %s: missing %s, unknown %s' % (
                        arq_uuid, missing, sorted(unknown)))
            ops = [{'path': '/' + f, 'op': 'add', 'value': binding[f]}
                   for f in BIND_FIELDS]
            if binding.get('project_id'):
                use_project = True
                ops.append({'path': '/project_id', 'op': 'add',
                            'value': binding['project_id']})
            patch[arq_uuid] = ops
        headers = {}
        if use_project:
            headers['OpenStack-API-Version'] = (
                '%s %s' % (SERVICE_TYPE, PROJECT_ID_MICROVERSION))
        LOG.info('Binding accelerator requests %s', ','.join(arq_uuids))
        resp = self._request('PATCH', self.ARQS, json=patch,
                             headers=headers)
        if not 200 <= resp.status_code < 300:
            raise transport.failure(resp, exception.ARQBindFailed,
                                    arqs=','.join(arq_uuids))

    def unbind_arqs(self, arq_uuids):
        """Unbind ARQs (keep them, drop host/RP/instance).

        Wire: ``PATCH /v2/accelerator_requests`` with ``remove`` ops on
        ``/hostname``, ``/device_rp_uuid`` and ``/instance_uuid`` for every
        ARQ (cyborg/api/controllers/v2/arqs.py: all ``remove`` = unbind;
        spec "Accelerator Requests": a failed spawn unbinds without
        deleting).

        :param arq_uuids: iterable of ARQ UUID strings; empty sends nothing.
        :raises: ARQUnbindFailed (4xx), AcceleratorServiceUnavailable.
        """
        arq_uuids = list(arq_uuids)
        if not arq_uuids:
            return
        patch = {u: [{'path': '/' + f, 'op': 'remove'} for f in BIND_FIELDS]
                 for u in arq_uuids}
        LOG.info('Unbinding accelerator requests %s', ','.join(arq_uuids))
        resp = self._request('PATCH', self.ARQS, json=patch)
        if not 200 <= resp.status_code < 300:
            raise transport.failure(resp, exception.ARQUnbindFailed,
                                    arqs=','.join(arq_uuids))

    def get_arq(self, arq_uuid):
        """Return one ARQ.

        Wire: ``GET /v2/accelerator_requests/<uuid>`` -> 200 ARQ dict.

        :param arq_uuid: str.
        :returns: dict with the ARQ fields of Cyborg 17's API
            (cyborg/api/controllers/v2/arqs.py).
        :raises: ARQNotFound (404), AcceleratorServiceUnavailable,
            AcceleratorClientError (other statuses, malformed body).
        """
        LOG.debug('Getting accelerator request %s', arq_uuid)
        resp = self._request(
            'GET', '%s/%s' % (self.ARQS, parse.quote(str(arq_uuid), safe='')))
        if resp.status_code == 404:
            raise transport.failure(resp, exception.ARQNotFound,
                                    uuid=arq_uuid)
        if resp.status_code != 200:
            raise transport.failure(
                resp, exception.AcceleratorClientError,
                reason='GET accelerator request %s' % arq_uuid)
        return transport.json_body(resp, 'accelerator request')

    def get_arqs_for_instance(self, instance_uuid, only_resolved=False):
        """Return the ARQs bound to an instance.

        Wire: ``GET /v2/accelerator_requests?instance=<uuid>`` -> 200
        ``{"arqs": [...]}``. Like Nova, ``bind_state=resolved`` is not sent
        (Cyborg would answer 423 while some ARQ is unresolved); resolution is
        filtered here: resolved = ``Bound``, ``BindFailed``, ``Deleting``.

        :param instance_uuid: str.
        :param only_resolved: bool.
        :returns: list of ARQ dicts; an empty list is a valid answer.
        :raises: AcceleratorServiceUnavailable, AcceleratorClientError
            (non-200 status, malformed body).
        """
        LOG.debug('Getting accelerator requests of instance %s',
                  instance_uuid)
        resp = self._request('GET', self.ARQS,
                             params={'instance': instance_uuid})
        if resp.status_code != 200:
            raise transport.failure(
                resp, exception.AcceleratorClientError,
                reason='GET accelerator requests of instance %s' %
                       instance_uuid)
        arqs = transport.json_body(
            resp, 'accelerator request list').get('arqs')
        if arqs is None:
            arqs = []
        if not isinstance(arqs, list):
            raise exception.AcceleratorClientError(
                reason='"arqs" is not a list', status_code=resp.status_code)
        if only_resolved:
            arqs = [a for a in arqs if a.get('state') in RESOLVED_STATES]
        return arqs

    def _delete(self, params, target):
        LOG.info('Deleting accelerator requests of %s', target)
        resp = self._request('DELETE', self.ARQS, params=params)
        if resp.status_code == 404:
            LOG.debug('Accelerator requests of %s already gone', target)
            return
        if not 200 <= resp.status_code < 300:
            raise transport.failure(resp, exception.ARQDeleteFailed,
                                    target=target)

    def delete_arqs_for_instance(self, instance_uuid):
        """Delete (unbinding first, server side) all ARQs of an instance.

        Wire: ``DELETE /v2/accelerator_requests?instance=<uuid>``. Idempotent:
        404 counts as success.

        :param instance_uuid: str.
        :raises: ARQDeleteFailed (other 4xx), AcceleratorServiceUnavailable.
        """
        self._delete({'instance': instance_uuid},
                     'instance %s' % instance_uuid)

    def delete_arqs(self, arq_uuids):
        """Delete ARQs by UUID (e.g. ones that failed to bind).

        Wire: ``DELETE /v2/accelerator_requests?arqs=<u1>,<u2>``. Idempotent:
        404 counts as success; an empty list sends nothing.

        :param arq_uuids: iterable of ARQ UUID strings.
        :raises: ARQDeleteFailed (other 4xx), AcceleratorServiceUnavailable.
        """
        arq_uuids = list(arq_uuids)
        if not arq_uuids:
            return
        joined = ','.join(arq_uuids)
        self._delete({'arqs': joined}, 'ARQs %s' % joined)
