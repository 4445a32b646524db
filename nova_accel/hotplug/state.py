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

"""Which accelerator requests (ARQs) were hot-plugged into an instance.

Kept in the instance's ``system_metadata`` (Nova's per-instance key/value
store: it survives reboots, nova-compute restarts and rebuilds), one key per
hot-plugged ARQ::

    accel_hotplug:<attach id>:<arq uuid> = {"p": <device profile name>,
                                             "rp": <device RP uuid>,
                                             "r": {<RC>: <amount>}}

The attach id (the first ARQ's UUID) groups the ARQs of one attach, so a
detach removes exactly what one attach added, even when the same profile
was attached twice or is also the flavor's ``accel:device_profile``.
``r`` (what the ARQ's request group added to the Placement allocation on
``rp``) is written on the first ARQ of each request group only, so the
allocation to give back is known even if the device profile changed or
the accelerator service lost the ARQ.

The drivers read it to know, without asking the accelerator service about
every instance, which instances hold ARQs that Nova itself does not know
about (Nova only looks for ARQs when the flavor has
``accel:device_profile``).  Callers save the instance.
"""

import collections

from oslo_serialization import jsonutils

PREFIX = 'accel_hotplug:'


def _keys(instance):
    return [k for k in (getattr(instance, 'system_metadata', None) or {})
            if k.startswith(PREFIX)]


def attachments(instance):
    """Return ``{attach_id: {"profile": name, "arqs": [arq uuid, ...],
    "allocation": {rp: {"resources": {RC: n}}}}}``."""
    out = collections.OrderedDict()
    for key in sorted(_keys(instance)):
        try:
            attach_id, arq_uuid = key[len(PREFIX):].split(':', 1)
            value = jsonutils.loads(instance.system_metadata[key])
        except ValueError:
            continue
        entry = out.setdefault(attach_id, {
            'profile': value.get('p'), 'arqs': [], 'allocation': {}})
        entry['arqs'].append(arq_uuid)
        if value.get('r') and value.get('rp'):
            res = entry['allocation'].setdefault(
                value['rp'], {'resources': {}})['resources']
            for rc, amount in value['r'].items():
                res[rc] = res.get(rc, 0) + amount
    return out


def arq_uuids(instance):
    """Return the set of every hot-plugged ARQ UUID of ``instance``."""
    return {u for a in attachments(instance).values() for u in a['arqs']}


def has_hotplugged(instance):
    """Whether ``instance`` (a ``nova.objects.Instance``; one without
    ``system_metadata`` counts as none) has any hot-plug attach
    recorded."""
    return bool(_keys(instance))


def find(instance, profile):
    """Return the attach id of one attach of ``profile``, or None."""
    for attach_id, entry in attachments(instance).items():
        if entry['profile'] == profile:
            return attach_id
    return None


def record(instance, profile, entries):
    """Record the ARQs of one attach; returns its attach id.

    :param entries: list of ``(arq_uuid, rp_uuid, resources or None)``,
        ``resources`` (``{RC: n}``) given on one ARQ per request group.
    """
    attach_id = entries[0][0]
    for arq_uuid, rp, resources in entries:
        value = {'p': profile, 'rp': rp}
        if resources:
            value['r'] = resources
        instance.system_metadata['%s%s:%s' % (PREFIX, attach_id,
                                              arq_uuid)] = (
            jsonutils.dumps(value, sort_keys=True))
    return attach_id


def forget(instance, attach_id=None):
    """Forget one attach (or, with no id, every hot-plugged ARQ)."""
    for key in _keys(instance):
        if attach_id is None or key.startswith(
                '%s%s:' % (PREFIX, attach_id)):
            del instance.system_metadata[key]


def move(instance, arq_uuid, rp_uuid):
    """Record that hot-plugged ARQ ``arq_uuid`` of ``instance`` is now on
    provider ``rp_uuid`` (a replaced device); nothing for an ARQ that was
    not hot-plugged.  The caller saves the instance."""
    for key in _keys(instance):
        if key.endswith(':' + arq_uuid):
            value = jsonutils.loads(instance.system_metadata[key])
            value['rp'] = rp_uuid
            instance.system_metadata[key] = jsonutils.dumps(value)
