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

"""accel_backend's own services (this repository): the configuration
file of a test or benchmark deployment, the commands, and when a service
is ready.

Programs are the console scripts of ``setup.cfg``
(``accel-backend``, ``accel-backend-api``, ``accel-backend-conductor``,
``accel-backend-agent``, ``accel-backend-manage``).
"""

import json


def _admin_token(endpoint):
    return {'auth_type': 'admin_token', 'endpoint': endpoint,
            'token': 'admin', 'endpoint_override': endpoint}


def config(placement_url, nova_url, sysfs_root, device_specs, /,
           **sections):
    """Text of an ``accel-backend.conf`` that points the service at a
    Placement and a Nova of the caller with the noauth2-style ``admin``
    token, a recorded sysfs tree and device specs.

    :param placement_url: Placement endpoint URL (str).
    :param nova_url: compute API endpoint URL (str), e.g. ``.../v2.1``.
    :param sysfs_root: recorded sysfs tree (str path).
    :param device_specs: list of device spec dicts (``[discovery]
        device_spec``, one line each).
    :param sections: ``{section: {option: value}}`` added to or overriding
        the defaults below (noauth, 2 binding workers, one report at
        start, fast event retries, new policy defaults); a list value is
        written as repeated lines.
    :returns: str.
    """
    conf = {
        'DEFAULT': {},
        'api': {'auth_strategy': 'noauth'},
        'binding': {'workers': 2},
        'discovery': {'sysfs_root': sysfs_root, 'report_interval': 0,
                      'device_spec': [json.dumps(s) for s in device_specs]},
        'placement': _admin_token(placement_url),
        'nova': dict(_admin_token(nova_url), event_retry_interval=0.05,
                     event_retry_timeout=10),
        # oslo.policy 6's default, written out: Placement's test fixture
        # sets the process-wide default to False (set_defaults) in every
        # test process that runs it.
        'oslo_policy': {'enforce_new_defaults': True},
    }
    for name, opts in sections.items():
        conf.setdefault(name, {}).update(opts)
    lines = []
    for name, opts in conf.items():
        if not opts:
            continue
        lines.append('[%s]' % name)
        for key, value in opts.items():
            for item in value if isinstance(value, list) else [value]:
                lines.append('%s = %s' % (key, item))
    return '\n'.join(lines) + '\n'


def db_sync_argv(manage, config_file):
    """``accel-backend-manage db sync`` (``manage``: its argv prefix, a
    list) on ``config_file``."""
    return list(manage) + ['--config-file', config_file, 'db', 'sync']


def stored(deployables, count):
    """Whether discovery has stored ``count`` devices: at least ``count``
    deployables (dicts of ``GET /v2/deployables``), each with the UUID of
    its resource provider (``rp_uuid``, set when stored; the provider
    itself is written by the report that follows).
    """
    return len(deployables) >= count and all(
        d.get('rp_uuid') for d in deployables)


def reported_query(root_rp, resource_class):
    """The Placement path (microversion 1.18 or later) listing the
    providers under ``root_rp`` that the report has finished: inventory
    of ``resource_class`` and the ``OWNER_CYBORG`` trait."""
    return ('/resource_providers?in_tree=%s&resources=%s:1'
            '&required=OWNER_CYBORG' % (root_rp, resource_class))
