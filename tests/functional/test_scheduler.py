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

"""Accelerator-aware scheduling with two computes.

``compute1`` has the two GPUs accel_backend reports (its ``[DEFAULT]
host``); ``compute2`` has none.  compute1 also has twice the RAM, so
Nova's own weighers (RAMWeigher spreads to the most free RAM) prefer it
for every server: without ``AcceleratorHostReservationWeigher`` a plain
server lands on the GPU host, with it the plain server goes to compute2
and the GPUs stay free.
"""

import time

from nova.tests.fixtures import libvirt as fakelibvirt

from nova_accel.scheduler import weighers
from tests.functional import base

WEIGHER = ('nova_accel.scheduler.weighers.'
           'AcceleratorHostReservationWeigher')
NOVA_WEIGHERS = 'nova.scheduler.weights.ram.RAMWeigher'
GPU_HOST = 'compute1'
PLAIN_HOST = 'compute2'


class TwoComputesTestBase(base.AccelServersTestBase):

    WEIGHT_CLASSES = [NOVA_WEIGHERS]

    def _setup_scheduler_service(self):
        self.flags(weight_classes=self.WEIGHT_CLASSES,
                   group='filter_scheduler')
        # RAM decides between the two hosts among Nova's weighers; the
        # bundle's weigher must outweigh a full RAM difference (both
        # normalise to 0..1), so it gets more than RAMWeigher's 1.0.
        self.flags(group='nova_accel',
                   **{weighers.MULTIPLIER: 2.0,
                      'accelerator_weigher_refresh_interval': 0.1})
        return super()._setup_scheduler_service()

    def fresh_view(self):
        """Wait for the weigher's view to be read again from Placement,
        by a read started after this call (the view is read off the
        request path)."""
        for weigher in self.scheduler.manager.host_manager.weighers:
            if isinstance(weigher,
                          weighers.AcceleratorHostReservationWeigher):
                view = weigher.view
                view.start()
                reads = view.reads
                deadline = time.monotonic() + 30
                while view.reads < reads + 2:
                    self.assertLess(time.monotonic(), deadline)
                    time.sleep(0.02)

    def start_compute(self, hostname='compute1', host_info=None, **kwargs):
        if host_info is None and 'connection' not in kwargs:
            host_info = fakelibvirt.HostInfo(
                cpu_nodes=1, cpu_sockets=1, cpu_cores=4, cpu_threads=1,
                kB_mem=(32 if hostname == GPU_HOST else 16) * 1024 * 1024)
        return super().start_compute(hostname=hostname, host_info=host_info,
                                     **kwargs)

    def setUp(self):
        super().setUp()
        self.assertEqual(GPU_HOST, self.COMPUTE)
        self.start_compute(hostname=PLAIN_HOST)
        self.rps = self.device_rps()
        self.assertEqual(2, len(self.rps))
        # The GPUs are children of compute1's provider only.
        gpu_root = self._get_provider_uuid_by_host(GPU_HOST)
        for rp in self.rps.values():
            got = self.placement.get(
                '/resource_providers/%s' % rp,
                version='1.14').body['root_provider_uuid']
            self.assertEqual(gpu_root, got)
        self.create_device_profile('gpu', [{'resources:PGPU': '1'}])
        self.gpu_flavor = self.accel_flavor('gpu')
        self.plain_flavor = self._create_flavor(memory_mb=1024, vcpu=1)

    def boot_plain(self):
        server = self._create_server(flavor_id=self.plain_flavor,
                                     networks='none')
        return server['OS-EXT-SRV-ATTR:host']

    def boot_gpu(self):
        server = self._create_server(flavor_id=self.gpu_flavor,
                                     networks='none')
        self.assertEqual('Bound', self.arqs_of(server['id'])[0]['state'])
        return server['OS-EXT-SRV-ATTR:host']


class WithoutWeigherTest(TwoComputesTestBase):
    """Control: Nova's weighers alone put a plain server on the GPU host."""

    def test_plain_server_lands_on_gpu_host(self):
        self.assertEqual(GPU_HOST, self.boot_plain())


class WithWeigherTest(TwoComputesTestBase):

    WEIGHT_CLASSES = [NOVA_WEIGHERS, WEIGHER]

    def test_plain_server_avoids_gpu_host(self):
        self.fresh_view()
        self.assertEqual(PLAIN_HOST, self.boot_plain())

    def test_gpu_servers_unaffected_and_full_gpu_host_is_neutral(self):
        # Requests with a device profile are left alone: the GPUs are
        # only on compute1.
        self.assertEqual(GPU_HOST, self.boot_gpu())
        # One GPU still free: plain servers still kept off compute1.
        self.fresh_view()
        self.assertEqual(PLAIN_HOST, self.boot_plain())
        self.assertEqual(GPU_HOST, self.boot_gpu())
        # No free GPU left: nothing to keep free, Nova's weighers decide
        # again (compute1 still has the most free RAM) once the view has
        # been read after the allocation.
        self.fresh_view()
        self.assertEqual(GPU_HOST, self.boot_plain())

    def test_disabled_gpus_are_not_kept_free(self):
        # Devices held back by accel_backend (reserved = total in
        # Placement) are not free accelerators.
        for rp in self.rps.values():
            url = '/resource_providers/%s/inventories/PGPU' % rp
            inv = self.placement.get(url).body
            resp = self.placement.put(
                url, {'resource_provider_generation':
                      inv['resource_provider_generation'],
                      'total': inv['total'], 'reserved': inv['total']},
                version='1.26')
            self.assertEqual(200, resp.status, resp.body)
        self.fresh_view()
        self.assertEqual(GPU_HOST, self.boot_plain())
