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

"""``tools.check_docs``: the install and admin guides name only commands,
options, ports, roles and metrics the code has, and the checker reports
each kind of false claim (synthetic RST snippets), so that the first test
cannot pass by reading nothing.

The facts come from the code and the installed distributions of this
environment (the test environment has python-openstackclient and
python-cyborgclient, so ``openstack accelerator`` commands are checked
here; ``tox -e docs`` says when it cannot check them).
"""

import textwrap

import testtools

from tools import check_docs
from tools import doc_facts

_FACTS = []


def _facts():
    if not _FACTS:
        _FACTS.append(doc_facts.Facts())
    return _FACTS[0]


def _check(rst):
    findings, skipped = check_docs.check_rst(textwrap.dedent(rst), _facts())
    return [(kind, claim) for _line, kind, claim, _why in findings], skipped


class TestGuides(testtools.TestCase):

    def test_guides_hold_no_false_claim(self):
        failing, _allowed, skipped = check_docs.check_guides(
            facts=_facts())
        self.assertEqual([], failing)
        # Everything is checkable in the test environment.
        self.assertEqual(set(), skipped)

    def test_temporary_allowances_still_match_a_finding(self):
        # An allowance whose claim is gone from the guides must go too.
        _failing, allowed, _skipped = check_docs.check_guides(
            facts=_facts())
        self.assertEqual(len(check_docs.TEMPORARY_ALLOWED), len(allowed))

    def test_main_exit_status(self):
        self.assertEqual(0, check_docs.main([]))


class TestFalseClaimsAreReported(testtools.TestCase):

    def test_made_up_option_and_group(self):
        found, _ = _check('''
            Set ``[discovery] device_specs`` and ``[dicsovery] fake_total``;
            ``[discovery] device_spec`` and ``[mdev_<type>] max_instances``
            exist.
            ''')
        self.assertEqual([('option', '[dicsovery] fake_total'),
                          ('option', '[discovery] device_specs')],
                         sorted(found))

    def test_ini_block_keys(self):
        found, _ = _check('''
            .. code-block:: ini

               [api]
               port = 6666
               listen_port = 6666
               # comment_only = 1
               [metrics]
               enabled = true
            ''')
        self.assertEqual([('option', '[api] listen_port')], found)

    def test_library_and_nova_options_are_known(self):
        found, _ = _check('''
            ``[oslo_messaging_notifications] driver``, ``[cors]
            allowed_origin``, ``[database] max_pool_size``, ``[DEFAULT]
            transport_url``, ``[service_user] send_service_user_token``,
            ``[pci] device_spec``, ``[keystone_authtoken]``; extras such
            as ``pip install nova-accel[cyborg-import]`` are no group,
            and ``[mysql]`` alone is an extra; ``[mysqld]`` is nothing.
            ''')
        self.assertEqual([('option', '[mysqld]')], found)

    def test_made_up_port(self):
        found, _ = _check('''
            The endpoint is ``http://<host>:6667/v2``; RabbitMQ is
            ``rabbit://u:p@rabbit-host:5672/accel``; PCI ids such as
            ``10de:1eb8`` are no port.

            The metrics are at ``127.0.0.1:6666``.
            ''')
        self.assertEqual([('port', '6666'), ('port', '6667')], sorted(found))

    def test_made_up_console_script_and_subcommands(self):
        found, _ = _check('''
            .. code-block:: console

               $ accel-backend-manage --config-file /etc/x.conf \\
                   db upgrade
               $ accel-backend-manage discovery sync --forced
               $ accel-backend-manage discovery sync --force --no-report
               $ accel-backend-scheduler --config-file ...

            Then ``accel-backend-status --config-file ... upgrade check
            [--json]`` and ``nova-accel attach-accelerator --server <uuid>
            --device-profile gpu [--wait 3]``; ``accel-backend.conf`` is a
            file, ``accel-backend:<host>`` a publisher.
            ''')
        self.assertEqual(
            [('command', 'accel-backend-manage --config-file /etc/x.conf '
              'db upgrade'),
             ('command', 'accel-backend-manage discovery sync --forced'),
             ('command', 'accel-backend-scheduler'),
             ('command', 'nova-accel attach-accelerator --server <uuid> '
              '--device-profile gpu [--wait 3]')],
            sorted(found))

    def test_made_up_openstack_command(self):
        found, skipped = _check('''
            .. code-block:: console

               $ openstack accelerator device profile create gpu '[]'
               $ openstack accelerator device reset <uuid>
            ''')
        self.assertEqual([('command', 'openstack accelerator device reset')],
                         found)
        self.assertEqual(set(), skipped)

    def test_plugin_commands_without_their_client(self):
        # The docs environment has nova-accel's own ``openstack
        # accelerator device taint`` commands but not python-cyborgclient:
        # the client's commands are not checkable there (skipped, not
        # false), the plugin's are checked.
        facts = _facts()
        saved = facts.openstack, facts.openstack_families
        self.addCleanup(setattr, facts, 'openstack', saved[0])
        self.addCleanup(setattr, facts, 'openstack_families', saved[1])
        # As there: the plugin's commands only.
        facts.openstack = {c for c in saved[0] if c[:3] == (
            'accelerator', 'device', 'taint') or c[:3] == (
            'accelerator', 'device', 'untaint')}
        facts.openstack_families = set()
        found, skipped = _check('''
            .. code-block:: console

               $ openstack accelerator device taint <uuid> --key k
               $ openstack accelerator device list
            ''')
        self.assertEqual([], found)
        self.assertEqual(1, len(skipped))
        facts.openstack, facts.openstack_families = saved
        found, skipped = _check('''
            .. code-block:: console

               $ openstack accelerator device taint <uuid> --key k
               $ openstack accelerator device frobnicate
            ''')
        self.assertEqual(
            [('command', 'openstack accelerator device frobnicate')], found)

    def test_made_up_role(self):
        found, _ = _check('''
            The scheduler role runs it; the API role and the ``service``
            role are real, and ``role = conductor`` too.
            ''')
        self.assertEqual([('role', 'scheduler')], found)

    def test_made_up_metric(self):
        found, _ = _check('''
            ``accel_bind_failures_total``, ``accel_bind_seconds_count``,
            ``accel_arqs`` and the health check ``accel_database`` exist;
            ``accel_bind_failures`` (a counter is exposed with ``_total``)
            and ``accel_binds_total`` do not.
            ''')
        self.assertEqual([('metric', 'accel_bind_failures'),
                          ('metric', 'accel_binds_total')], sorted(found))


class TestHealthcheckPerRole(testtools.TestCase):
    """The admin guide's ``/healthcheck`` entry says, per program, the
    checks its role runs by default (``accel_backend.conf.HEALTH_BACKENDS``,
    set by ``accel_backend.service.Service`` for the roles that serve the
    API), and that the others serve none."""

    PROGRAMS = {'accel-backend': 'embedded', 'accel-backend-api': 'api',
                'accel-backend-conductor': 'conductor',
                'accel-backend-agent': 'agent'}

    def _entries(self):
        with open(check_docs.os.path.join(
                check_docs.ROOT, 'doc/source/admin/index.rst')) as f:
            lines = f.read().splitlines()
        start = next(i for i, line in enumerate(lines)
                     if line.startswith('* ``GET /healthcheck``'))
        entries, term = {}, None
        for line in lines[start + 1:]:
            if line.startswith('* '):
                break
            if line.startswith('  ``') and not line.startswith('    '):
                term = line
                entries[term] = []
            elif term and line.startswith('    '):
                entries[term].append(line.strip())
        return {program: ' '.join(body) for term, body in entries.items()
                for program in self.PROGRAMS
                if '``%s``' % program in term.split(' (')[0]}

    def test_each_role_says_what_it_checks(self):
        from accel_backend import conf
        from accel_backend import service
        self.assertEqual(set(service.ROLES), set(self.PROGRAMS.values()))
        entries = self._entries()
        self.assertEqual(set(self.PROGRAMS), set(entries))
        for program, role in self.PROGRAMS.items():
            body = entries[program]
            if role in conf.HEALTH_BACKENDS:
                self.assertTrue(body.startswith('``%s``' % ', '.join(
                    conf.HEALTH_BACKENDS[role])), (program, body))
            else:
                self.assertTrue(body.startswith('no ``/healthcheck``'),
                                (program, body))
