"""accel_backend configuration files for tests, written one way.

Every test that runs accel_backend (in-process or as a process) points it at
a Placement and a Nova of the test with the noauth2-style ``admin`` token,
a recorded sysfs tree and device specs; only a few options differ.
"""

import json


def _admin_token(endpoint):
    return {'auth_type': 'admin_token', 'endpoint': endpoint,
            'token': 'admin', 'endpoint_override': endpoint}


def accel_backend_conf(placement_url, nova_url, sysfs_root, device_specs,
                       /, **sections):
    """Text of an accel-backend.conf.

    :param placement_url: Placement endpoint URL (str).
    :param nova_url: compute API endpoint URL (str), e.g. ``.../v2.1``.
    :param sysfs_root: recorded sysfs tree (str path).
    :param device_specs: list of device spec dicts (``[discovery]
        device_spec``, one line each).
    :param sections: ``{section: {option: value}}`` added to or overriding
        the defaults below (noauth, 2 binding workers, one report at start,
        fast event retries, new policy defaults); a list value is written as repeated lines.
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
