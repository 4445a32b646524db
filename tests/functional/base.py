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

"""Harness: Nova 34 ``ServersTestBase`` + a real accel_backend ``Service``.

accel_backend runs in-process on its own config (SQLite file, noauth,
recorded sysfs tree), reports to the Placement fixture over HTTP and posts
its ``accelerator-request-bound`` events to the Nova API fixture over HTTP
(wsgi-intercept on both ends).  Nova reaches it through
``[cyborg] endpoint_override``.
"""

import os
import threading

import fixtures
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from lxml import etree
from wsgi_intercept import interceptor

from nova import conf as nova_conf
from nova import context as nova_context
from nova.tests.functional.libvirt import base as libvirt_base

from accel_backend import conf as accel_conf
from accel_backend import service as accel_service
from tools.launch import accel_backend as launch_accel

ACCEL_URL = 'http://accel.test:80'
SYSFS_TWO_GPUS = os.path.join(os.path.dirname(__file__), '..', 'fixtures',
                              'sysfs', 'two-gpus')
T4_SPEC = {'vendor_id': '10de', 'product_id': '1eb8',
           'resource_class': 'PGPU', 'traits': ['CUSTOM_NVIDIA_T4'],
           'device_type': 'GPU'}


def hostdev_addresses(xml):
    """PCI addresses ``DDDD:BB:SS.F`` of the guest's PCI hostdevs."""
    out = []
    for addr in etree.fromstring(xml).findall(
            './devices/hostdev[@type="pci"]/source/address'):
        out.append('%04x:%02x:%02x.%x' % tuple(
            int(addr.get(k), 16) for k in ('domain', 'bus', 'slot',
                                           'function')))
    return out


class AccelServersTestBase(libvirt_base.ServersTestBase):
    """Boots servers through Nova's API with accel_backend behind it.

    Subclasses get ``self.accel`` (the accel_backend ``Service``),
    ``self.accel_api`` (a keystoneauth session to it) and helpers.
    """

    ADMIN_API = True
    microversion = 'latest'
    COMPUTE = 'compute1'
    SYSFS_ROOT = SYSFS_TWO_GPUS
    DEVICE_SPECS = [T4_SPEC]
    #: ``{section: {option: value}}`` added to accel_backend's config.
    ACCEL_SECTIONS = {}
    ARQ_BINDING_TIMEOUT = 10

    def setUp(self):
        super().setUp()
        # Nova's ConfFixture sets manager_shutdown_timeout 0, so
        # Service.stop() leaves the manager's graceful shutdown running in
        # a thread; when that thread reaches shutdown_all_executors() after
        # the ServiceFixture has put the real one back (a loaded machine),
        # the process's executor factory stays shut down and every later
        # test of the worker fails in setUp ("Cannot create the
        # cell_worker thread pool executor"). With 20 (all of it reserved
        # for clean-up: no wait for in-progress tasks) stop() waits for
        # that thread, while the fixture's no-op is still in place. Read
        # at stop time; ConfFixture's reset runs after every service stop.
        self.flags(manager_shutdown_timeout=20)
        self.flags(arq_binding_timeout=self.ARQ_BINDING_TIMEOUT)
        self.flags(endpoint_override=ACCEL_URL + '/v2', group='cyborg')
        self._give_requests_a_token()
        self._send_service_token()
        self._skip_backing_file_check()
        self.start_compute(hostname=self.COMPUTE)
        self.accel = self._start_accel_backend()
        self.accel_api = ks_session.Session()
        self.accel.discover_and_report()

    def _setup_compute_service(self):
        # The bundle's libvirt driver, through the in-tree-style shim.
        self.flags(compute_driver='accel.LibvirtDriver')

    def _give_requests_a_token(self):
        # Test-harness only: OSAPIFixture's stub context has no token, so
        # Nova would refuse to call the accelerator service. Identity from
        # X-Auth-User/X-Roles as the fixture does; accel_backend's events
        # authenticate with the noauth2-style token "admin".
        project_id = self.api_fixture.project_id

        def fake_ctx(env, **kwargs):
            token = env.get('HTTP_X_AUTH_TOKEN')
            user_id = env.get('HTTP_X_AUTH_USER') or (
                'admin' if token == 'admin' else None)
            roles = env.get('HTTP_X_ROLES', 'admin,member,reader').split(',')
            return nova_context.RequestContext(
                user_id, env.get('HTTP_X_AUTH_PROJECT_ID', project_id),
                is_admin=user_id == 'admin', roles=roles,
                auth_token='admin', **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'nova.api.auth.NovaKeystoneContext._create_context', fake_ctx))

    def _send_service_token(self):
        # What every deployment sets in nova.conf (accel_backend lets only
        # service-token holders bind, unbind and delete bound ARQs):
        # [service_user] send_service_user_token = true with the service
        # user's credentials; here keystoneauth's admin_token plugin, whose
        # token noauth accel_backend takes as a service token.
        nova_conf.CONF.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='service_user')
        self.flags(send_service_user_token=True, auth_type='admin_token',
                   token='admin', endpoint=ACCEL_URL + '/v2',
                   group='service_user')

    def _skip_backing_file_check(self):
        # Test-harness only: with a token in the context, libvirt's hard
        # reboot (and power on, which is a hard reboot) re-populates the
        # disks' backing files and stats the disk files first; the fake
        # image backend of Nova's harness never creates them (Nova's own
        # functional tests have no token and skip that step).
        self.useFixture(fixtures.MockPatch(
            'nova.virt.libvirt.driver.LibvirtDriver.'
            '_get_instance_disk_info_from_config', return_value=[]))

    def accel_config(self, tmpdir):
        """accel_backend config file text for this test."""
        sections = {'DEFAULT': {'host': self.COMPUTE,
                                'state_path': tmpdir},
                    'nova': {'event_retry_timeout': 30}}
        for name, opts in self.ACCEL_SECTIONS.items():
            sections.setdefault(name, {}).update(opts)
        return launch_accel.config(
            self.placement_fixture.endpoint, self.api_fixture.base_url,
            os.path.abspath(self.SYSFS_ROOT), self.DEVICE_SPECS, **sections)

    def _start_accel_backend(self):
        tmpdir = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmpdir, 'accel-backend.conf')
        with open(path, 'w') as f:
            f.write(self.accel_config(tmpdir))
        conf = accel_conf.new_conf(config_files=[path])
        svc = accel_service.Service(conf)
        self.addCleanup(svc.stop)
        intercept = interceptor.RequestsInterceptor(lambda: svc.app,
                                                    url=ACCEL_URL)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)
        return svc

    # -- helpers ---------------------------------------------------------

    def accel_request(self, method, path, body=None, expect=(200,)):
        """Call accel_backend's API as admin with a service token (as
        Nova would, behind Nova's back); returns decoded JSON."""
        resp = self.accel_api.request(
            ACCEL_URL + path, method, json=body, raise_exc=False,
            headers={'X-Auth-Token': 'admin', 'X-Service-Token': 'nova'})
        self.assertIn(resp.status_code, expect, resp.text)
        return resp.json() if resp.content else None

    def accel_v25(self, method, path, body=None, expect=(200,)):
        """Call accel_backend's API as admin at microversion 2.5 (taints);
        returns decoded JSON."""
        resp = self.accel_api.request(
            ACCEL_URL + path, method, json=body, raise_exc=False,
            headers={'X-Auth-Token': 'admin',
                     'OpenStack-API-Version': 'accelerator 2.5'})
        self.assertIn(resp.status_code, expect, resp.text)
        return resp.json() if resp.content else None

    def create_device_profile(self, name, groups):
        return self.accel_request('POST', '/v2/device_profiles',
                                  [{'name': name, 'groups': groups}],
                                  expect=(201,))

    def arqs_of(self, server_id):
        return self.accel_request(
            'GET', '/v2/accelerator_requests?instance=%s' % server_id)['arqs']

    def assert_one_bound_arq(self, server_id, rp_uuid):
        """The server has one ARQ, Bound to it on this compute host and on
        the device provider ``rp_uuid``; returns that ARQ (dict)."""
        arqs = self.arqs_of(server_id)
        self.assertEqual(1, len(arqs))
        arq = arqs[0]
        self.assertEqual('Bound', arq['state'])
        self.assertEqual(server_id, arq['instance_uuid'])
        self.assertEqual(self.COMPUTE, arq['hostname'])
        self.assertEqual(rp_uuid, arq['device_rp_uuid'])
        return arq

    def accel_flavor(self, profile):
        flavor_id = self._create_flavor(
            extra_spec={'accel:device_profile': profile})
        return flavor_id

    def guest_xml(self, server_id):
        conn = self.computes[self.COMPUTE].driver._host.get_connection()
        return conn.lookupByUUIDString(server_id).XMLDesc(0)

    def device_rps(self):
        """``{pci_address: rp_uuid}`` of the devices accel_backend found."""
        return {r.address: r.rp_uuid for r in self.accel.discover_and_report()}

    def hang_binding(self):
        """Make accel_backend's binder hang (a hung host agent): the PATCH
        commits ``BindStarted`` and hands the ARQs to the binder threads,
        as it does for an agent (``[binding] mode = agents``), and every
        ``bind_many`` waits, up to 30 s, until the returned function is
        called (the test's cleanup calls it too).  Returns that function.
        """
        gate = threading.Event()
        real = self.accel.binder.bind_many

        def slow_bind(arq_uuids):
            gate.wait(30)
            return real(arq_uuids)

        self.useFixture(fixtures.MockPatchObject(
            self.accel.dispatcher, 'binds_in_transaction', False))
        self.useFixture(fixtures.MockPatchObject(self.accel.binder,
                                                 'bind_many', slow_bind))
        self.addCleanup(gate.set)
        return gate.set
