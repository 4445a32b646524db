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

"""``[taints]``: which device taints device profiles may tolerate
(``accel_common.tolerations``)."""

import json

from oslo_config import cfg
from oslo_config import types

from accel_common import pci
from accel_common import taints
from accel_common import tolerations

#: The fields of a ``[taints] devices`` value: required, optional.
RULE_FIELDS = (('address', 'key', 'effect'), ('value', 'reason'))


class TolerableKeys(types.List):
    """A list of taint keys ``accel_common.tolerations.check_keys``
    takes; oslo.config refuses another value when the option is read
    (``ConfigFileValueError``, one line and exit status 2 from our
    commands)."""

    def __call__(self, value):
        keys = super().__call__(value)
        try:
            return list(tolerations.check_keys(keys))
        except tolerations.InvalidTolerations as e:
            raise ValueError(str(e))


class DeviceTaintRule(types.ConfigType):
    """One ``[taints] devices`` value: a JSON object ``{"address": <PCI
    address pattern, Nova's [pci] device_spec dialect>, "key": str,
    "effect": "NoSchedule"|"NoExecute", "value"?: str, "reason"?: str}``.
    Read as a dict with the compiled pattern under ``"pattern"``
    (``accel_common.pci.AddressPattern``); anything else is refused when
    the option is read (``ConfigFileValueError``)."""

    def __init__(self):
        super().__init__(type_name='device taint rule')

    def __call__(self, value):
        if isinstance(value, dict):
            return value
        try:
            rule = json.loads(value)
        except ValueError as e:
            raise ValueError('not JSON: %s' % e)
        required, optional = RULE_FIELDS
        if not isinstance(rule, dict) or set(required) - set(rule) or \
                set(rule) - set(required + optional):
            raise ValueError('a JSON object with %s and optionally %s '
                             'expected, got %s' % (', '.join(required),
                                                   ', '.join(optional),
                                                   value))
        if rule['effect'] not in taints.EFFECTS:
            raise ValueError('effect must be one of %s, not %r' % (
                ', '.join(taints.EFFECTS), rule['effect']))
        for name, limit in (('key', 255), ('value', 255), ('reason', 65535)):
            text = rule.get(name)
            if text is not None and (not isinstance(text, str) or
                                     not text or len(text) > limit):
                raise ValueError('%s must be a string of 1 to %d '
                                 'characters' % (name, limit))
        try:
            rule['pattern'] = pci.compile_pattern(rule['address'],
                                                  '[taints] devices')
        except pci.InvalidPattern as e:
            raise ValueError(str(e))
        return rule

    def _formatter(self, value):
        return json.dumps({k: v for k, v in value.items()
                           if k != 'pattern'}, sort_keys=True)


GROUP = cfg.OptGroup(
    'taints', title='Device taints',
    help='Device taints (API microversion 2.5, accel-backend-manage '
         'device drain) and the tolerations of device profiles.')
OPTS = [
    cfg.Opt('tolerable_keys', type=TolerableKeys(), default=[],
            help='Taint keys a device profile group may tolerate with '
                 '"accel:tolerations": "<key>[,<key>...]" (for burn-in '
                 'or diagnostics on tainted devices by an admin '
                 'project). A NoSchedule taint of one of these keys on a '
                 'whole deployable is not a reservation in Placement but '
                 'the trait CUSTOM_ACCEL_TAINT_<KEY> of its resource '
                 'provider (upper case, other characters than A-Z, 0-9 '
                 'and _ as _), and every device profile group the API '
                 'serves forbids that trait unless it tolerates the key. '
                 'The keys accel_backend sets '
                 'itself (accel.openstack.org/unallocated, '
                 'accel.openstack.org/unhealthy) are refused. Set it alike '
                 'for the API, the conductor and accel-backend-manage.'),
    cfg.MultiOpt('devices', item_type=DeviceTaintRule(), default=None,
                 help='Taints of this host\'s devices, set by its '
                      'discovery pass (the agent\'s, or the embedded '
                      'service\'s) with set_by "accel_backend.config", '
                      'and removed by the first pass after the line goes. '
                      'One JSON object per line: {"address": "<PCI '
                      'address or pattern, as [pci] device_spec>", "key": '
                      '"<key>", "effect": "NoSchedule"|"NoExecute", '
                      '"value": "...", "reason": "..."}. A device matched '
                      'is tainted as a whole, a function of a pooled '
                      'deployable as that function. The same key set '
                      'through the API on that device is replaced.'),
]


def read(conf):
    """``([taints] tolerable_keys, [taints] devices)`` of ``conf``
    (tuple, list), read at once: a service refuses to start on a bad
    value (``ConfigFileValueError``), not at its first taint or pass."""
    return tuple(conf.taints.tolerable_keys), conf.taints.devices or []
