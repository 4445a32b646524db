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

"""Measure 1: boot overhead in Nova 34's functional harness.

Time from ``POST /servers`` to ``ACTIVE`` (polled every 5 ms, not the
harness's 0.5 s) for:

a. a flavor asking for one accelerator, served by accel_backend (the
   project's harness ``tests.functional.base.AccelServersTestBase``: real
   accel_backend over HTTP via wsgi-intercept, binder thread, event back to
   Nova's API);
b. the same kind of flavor served by Nova's in-memory fake of the
   accelerator client (``nova.tests.fixtures.CyborgFixture``): the floor,
   with device RPs created by hand as Nova's ``AcceleratorServerBase``
   needs;
c. a flavor without accelerators (in harness a; also measured in harness b
   as a cross-check).

Both harnesses run the bundle's ``accel.LibvirtDriver`` on fake libvirt.
Run as its own process (Nova's threading mode is chosen at import):
``python -m benchmarks.boot --boots N [--per-round R] --out result.json``.

Order: within a harness the flavors take turns, one boot each (ABAB...,
``benchmarks.stats.interleaved``); the two harnesses cannot run at once
(one Nova per process), so they take turns by rounds of ``R`` boots per
flavor (``benchmarks.stats.rounds``), each round a fresh harness with one
warm-up boot per flavor not counted.  A bind of 20 ms is small next to a
boot of 1.3 s +- 0.5 s: ``benchmarks.run`` takes >= 30 boots per flavor
and reports the ratio of medians with a bootstrap confidence interval.
"""

import argparse
import json
import sys
import time
import unittest

import tests  # noqa: F401  (chooses Nova's threading mode first)

from nova.tests import fixtures as nova_fixtures
from nova.tests.functional.libvirt import base as libvirt_base

from benchmarks import stats
from tests.functional import base

RESULTS = {}
POLL = 0.005


def _boot_once(test, flavor_id, timeout=120):
    """POST /servers, poll to ACTIVE, delete; returns seconds to ACTIVE."""
    body = test._build_server(flavor_id=flavor_id, networks='none')
    t0 = time.perf_counter()
    server = test.api.post_server({'server': body})
    end = time.monotonic() + timeout
    while True:
        cur = test.api.get_server(server['id'])
        if cur['status'] == 'ACTIVE':
            dt = time.perf_counter() - t0
            break
        if cur['status'] == 'ERROR':
            raise AssertionError('boot failed: %s' % cur.get('fault'))
        if time.monotonic() > end:
            raise AssertionError('boot did not finish in %ss' % timeout)
        time.sleep(POLL)
    test.api.delete_server(server['id'])
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            test.api.get_server(server['id'])
        except Exception:  # 404: gone
            break
        time.sleep(POLL)
    test.after_boot()
    return dt


def _series(test, flavors, boots):
    """Warm up once per flavor, then boot ``boots`` times per flavor,
    interleaved so drift hits all alike; the samples (seconds) are added
    to ``RESULTS[key]``.  ``flavors``: {key: flavor_id}."""
    for flavor in flavors.values():
        _boot_once(test, flavor)
    for key in stats.interleaved(list(flavors), boots):
        RESULTS.setdefault(key, []).append(_boot_once(test, flavors[key]))


class AccelBackendBoot(base.AccelServersTestBase):
    """Harness a (+ c): accel_backend behind Nova."""

    BOOTS = 10

    def after_boot(self):
        pass

    def runTest(self):
        self.create_device_profile(
            'gpu-t4', [{'resources:PGPU': '1',
                        'trait:CUSTOM_NVIDIA_T4': 'required'}])
        flavors = {'accel_backend': self.accel_flavor('gpu-t4'),
                   'no_accelerator': self._create_flavor()}
        _series(self, flavors, self.BOOTS)


class FakeCyborgBoot(libvirt_base.ServersTestBase):
    """Harness b: Nova's ``CyborgFixture`` (in-memory fake client)."""

    ADMIN_API = True
    microversion = 'latest'
    BOOTS = 10

    def _setup_compute_service(self):
        self.flags(compute_driver='accel.LibvirtDriver')

    def setUp(self):
        super().setUp()
        self.cyborg = self.useFixture(nova_fixtures.CyborgFixture())
        self.start_compute(hostname='compute1')
        root = self._get_provider_uuid_by_host('compute1')
        # One device RP under the compute node, as Nova's
        # AcceleratorServerBase makes them (FPGA x2, the fixture's trait).
        rp = self.placement.post(
            '/resource_providers', version='1.20',
            body={'name': 'FakeDevice0',
                  'parent_provider_uuid': root}).body['uuid']
        self.placement.put(
            '/resource_providers/%s/inventories' % rp, version='1.20',
            body={'resource_provider_generation': 0,
                  'inventories': {'FPGA': {
                      'total': 2, 'allocation_ratio': 1.0, 'max_unit': 2,
                      'min_unit': 1, 'reserved': 0, 'step_size': 1}}})
        self.placement.put('/traits/%s' % self.cyborg.trait, version='1.20',
                           body=None)
        gen = self.placement.get('/resource_providers/%s' % rp,
                                 version='1.20').body['generation']
        self.placement.put(
            '/resource_providers/%s/traits' % rp, version='1.20',
            body={'resource_provider_generation': gen,
                  'traits': [self.cyborg.trait]})

    def after_boot(self):
        # The fixture hands out its four canned ARQs in turn; boots are
        # sequential and each server is deleted, so the first is reused.
        self.cyborg.call_create_arq_count = 0

    def runTest(self):
        flavors = {'nova_fake': self._create_flavor(
            extra_spec={'accel:device_profile': self.cyborg.dp_name}),
            'no_accelerator_fake_harness': self._create_flavor()}
        _series(self, flavors, self.BOOTS)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument('--boots', type=int, default=30,
                   help='boots per flavor')
    p.add_argument('--per-round', type=int, default=10,
                   help='boots per flavor in one round of a harness')
    p.add_argument('--out', required=True)
    args = p.parse_args(argv)
    errors = []
    plan = stats.rounds(args.boots, args.per_round)
    for size in plan:
        for cls in (AccelBackendBoot, FakeCyborgBoot):
            cls.BOOTS = size
            result = unittest.TextTestRunner(stream=sys.stderr,
                                             verbosity=0).run(cls())
            for _, tb in result.errors + result.failures:
                errors.append('%s: %s' % (cls.__name__, tb[-2000:]))
        if errors:
            break
    with open(args.out, 'w') as f:
        json.dump({'boots': RESULTS, 'errors': errors,
                   'rounds': plan}, f)
    return 0 if not errors else 1


if __name__ == '__main__':
    sys.exit(main())
