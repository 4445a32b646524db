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

"""The upstream API suite of the Cyborg v2 API against accel_backend.

``python -m tools.aio conformance`` runs cyborg-tempest-plugin 2.8.0's API
tests (``cyborg_tempest_plugin.tests.api``, tempest 47) against the
all-in-one cloud that ``up`` started: real Keystone 30, accel_backend
behind keystonemiddleware (``[api] auth_strategy = keystone``) with the
``fake`` discovery driver (the device the suite expects), twice:

* ``legacy``: accel_backend with ``[oslo_policy] enforce_new_defaults =
  False``, the suite with ``[cyborg_policy] enforce_new_defaults = False``
  (every persona client is the admin; the SRBAC tests skip);
* ``new-defaults``: both ``True``: the project manager, member and reader
  personas, the ``service`` role and a system-scoped admin.

accel-backend is restarted between the modes (the option is read at
start). Each mode must end with exactly the expected failures below and
no other failure. Then nova-accel's own API tests
(``nova_accel_tempest_plugin.tests.api``: no user token, administrator,
member or reader, binds without a service token) run against the same
Keystone and must all pass, and last the audit of deleted instances with
the install guide's roles (``tools.aio.audit_check``); anything else exits
non-zero.
"""

import csv
import io
import subprocess
import sys

from tools.aio import audit_check
from tools.aio import cloud as cloud_mod
from tools.aio import config
from tools.aio import procs
from tools.aio import tempest as tempest_mod

REGEX = r'^cyborg_tempest_plugin\.tests\.api\.'
_PREFIX = 'cyborg_tempest_plugin.tests.api.'

#: Upstream tests that demand HTTP 500 from Cyborg 17 for bad input.
#: accel_backend answers 4xx (doc/cyborg-deviations.md) and will not
#: answer 500 to pass them.
EXPECTED_FAILURES = {
    _PREFIX + 'test_device_profile_negative.DeviceProfileNegativeTest.'
    'test_create_device_profile_name_is_null':
        'an empty name is 400 (schema), Cyborg answers 500',
    _PREFIX + 'test_device_profile_negative.DeviceProfileNegativeTest.'
    'test_create_device_profile_name_to_long':
        'a 256-character name is 400 (schema), Cyborg answers 500',
    _PREFIX + 'test_device_profile_negative.DeviceProfileNegativeTest.'
    'test_create_device_profile_server_fault':
        'a uuid that is taken is 409, Cyborg answers 500 from its '
        'unique index',
}
MODES = (('legacy', False), ('new-defaults', True))


def _restart_accel_backend(cloud, new_defaults):
    """Stop accel-backend, set ``[oslo_policy] enforce_new_defaults`` in
    its config and start it again (same port, same database)."""
    layout = cloud.layout
    path = layout.path('etc', 'accel-backend', 'accel-backend.conf')
    ini = config.accel_backend_conf(layout)
    ini.set('oslo_policy', 'enforce_new_defaults', new_defaults)
    with open(path, 'w') as f:
        f.write(ini.render())
    for rec in cloud.state['processes']:
        if rec['name'] == 'accel-backend' and procs.alive(rec):
            procs.stop(rec)
    cloud.state['processes'] = [r for r in cloud.state['processes']
                                if r['name'] != 'accel-backend']
    cloud.save()
    cloud.serve('accel-backend', [cloud.prog('accel-backend'),
                                  '--config-file', path],
                layout.url('accel', '/'))


def _results(workspace, env, cloud):
    """``{test id: status}`` of the last run (``stestr last``)."""
    proc = subprocess.run(
        [cloud.prog('stestr'), 'last', '--subunit'], cwd=workspace,
        env=env, capture_output=True, stdin=subprocess.DEVNULL)
    conv = subprocess.run(
        [cloud.prog('subunit2csv')], input=proc.stdout, capture_output=True)
    results = {}
    rows = csv.reader(io.StringIO(conv.stdout.decode()))
    next(rows, None)  # test,status,start_time,stop_time
    for row in rows:
        # A class whose setUpClass skipped counts once, as stestr shows.
        results[row[0].split('[')[0]] = row[1]
    return results


def _check(mode, results):
    """Print the counts of one mode; returns the list of problems."""
    count = {}
    for status in results.values():
        count[status] = count.get(status, 0) + 1
    # subunit2csv's statuses: success, failure, skip (xfail, uxsuccess).
    failed = {t for t, s in results.items()
              if s not in ('success', 'skip', 'xfail')}
    print('%s: %d tests: %d passed, %d failed (%d expected), %d skipped '
          '(a class skipped in setUpClass counts once)' % (
              mode, len(results), count.get('success', 0), len(failed),
              len(failed & set(EXPECTED_FAILURES)), count.get('skip', 0)),
          flush=True)
    problems = ['%s: unexpected failure %s' % (mode, t)
                for t in sorted(failed - set(EXPECTED_FAILURES))]
    problems += ['%s: %s passed but is listed as expected to fail' % (
        mode, t) for t in sorted(set(EXPECTED_FAILURES) - failed)
        if results.get(t) == 'success']
    if not results:
        problems.append('%s: no test ran' % mode)
    return problems


def run(concurrency=2):
    """Both modes; returns the exit status (0: as expected)."""
    cloud = cloud_mod.Cloud.load()
    if cloud is None:
        print('no cloud is up: python -m tools.aio up')
        return 1
    problems = []
    for mode, new_defaults in MODES:
        print('== %s: accel-backend with [oslo_policy] enforce_new_defaults '
              '= %s' % (mode, new_defaults), flush=True)
        _restart_accel_backend(cloud, new_defaults)
        workspace = tempest_mod.prepare(cloud, extra={
            'cyborg_policy': {'enforce_new_defaults': new_defaults},
            'service_available': {'cyborg': True}})
        tempest_mod.run_in(cloud, workspace, REGEX, concurrency)
        problems += _check(mode, _results(workspace, cloud.env(), cloud))
    # nova-accel's own API tests with the same Keystone, new defaults: no
    # user token (admin, member, reader) binds without a service token.
    _restart_accel_backend(cloud, True)
    workspace = tempest_mod.prepare(cloud)
    own, _ = tempest_mod.run_in(
        cloud, workspace, r'^nova_accel_tempest_plugin\.tests\.api\.',
        concurrency)
    if own != 0:
        problems.append('nova_accel_tempest_plugin API tests failed')
    # The audit of deleted instances with the documented roles.
    problems += audit_check.run(cloud)
    for test_id, why in sorted(EXPECTED_FAILURES.items()):
        print('expected failure %s: %s' % (test_id[len(_PREFIX):], why))
    for problem in problems:
        print('PROBLEM: %s' % problem, file=sys.stderr)
    return 1 if problems else 0
