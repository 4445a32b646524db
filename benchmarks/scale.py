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

"""Measure 5: scale.

a. An accel_backend database holding 1,000 compute nodes x 8 GPUs
   (devices, deployables, attach handles inserted directly through
   ``accel_backend.db.models``), with ARQs growing 100 -> 1,000 -> 10,000
   (inserted the same way: the first 8,000 bound to a handle each, the rest
   ``Initial``).  At each size, an ``accel-backend`` process serving that
   database answers, over HTTP: ARQ list by instance, device list by host,
   device profile lookup by name (``?name=``) and by UUID, and the list of
   all ARQs.
b. The agent side: the initial report of 64 GPUs to a real Placement and
   a resync with nothing changed, counted through
   ``PlacementClient.calls`` and timed.
"""

import os
import random
import time
import uuid

import sqlalchemy as sa

from accel_common import arq_states
from accel_common import handle_states
from benchmarks import common
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import accel_client
from tools.fixtures import sysfs as sysfs_fx
from tools.launch import accel_backend as launch_accel

HOSTS, DEVICES_PER_HOST = 1000, 8
ARQ_STEPS = (100, 1000, 10000)
QUICK_HOSTS, QUICK_ARQ_STEPS = 100, (100, 1000)
REPS, QUICK_REPS = 50, 15
AGENT_DEVICES = 64
QUICK_AGENT_DEVICES = 16


def _populate_devices(db, models, hosts):
    now = common_now()
    devices, deps, handles, rps = [], [], [], []
    did = 0
    for h in range(hosts):
        host = 'node-%04d' % h
        for d in range(DEVICES_PER_HOST):
            did += 1
            addr = sysfs_fx.gpu_address(d)
            rp = str(uuid.uuid4())
            devices.append({'id': did, 'uuid': str(uuid.uuid4()),
                            'type': 'GPU', 'vendor': sysfs_fx.GPU_VENDOR,
                            'model': sysfs_fx.GPU_PRODUCT, 'hostname': host,
                            'address': addr, 'status': 'enabled',
                            'std_board_info': {'class': '030200'},
                            'created_at': now})
            deps.append({'id': did, 'uuid': str(uuid.uuid4()),
                         'device_id': did, 'name': '%s_%s' % (host, addr),
                         'rp_uuid': rp, 'num_accelerators': 1,
                         'driver_name': 'generic_pci',
                         'resource_class': 'PGPU',
                         'traits': ['CUSTOM_NVIDIA_T4'], 'created_at': now})
            parts = addr.replace('.', ':').split(':')
            handles.append({'id': did, 'uuid': str(uuid.uuid4()),
                            'deployable_id': did, 'attach_type': 'PCI',
                            'attach_info': {'domain': parts[0],
                                            'bus': parts[1],
                                            'device': parts[2],
                                            'function': parts[3]},
                            'created_at': now,
                            **handle_states.columns(handle_states.AVAILABLE)})
            rps.append((host, rp, did))
    with db.transaction() as s:
        s.execute(sa.insert(models.Device), devices)
        s.execute(sa.insert(models.Deployable), deps)
        s.execute(sa.insert(models.AttachHandle), handles)
    return rps


def common_now():
    import datetime
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _add_arqs(db, models, dp, rps, start, stop, instances):
    now = common_now()
    rows, used = [], []
    for i in range(start, stop):
        row = {'uuid': str(uuid.uuid4()), 'device_profile_id': dp['id'],
               'device_profile_name': dp['name'],
               'device_profile_group_id': 0,
               'device_profile_group': {'resources:PGPU': '1'},
               'project_id': accel_client.PROJECT_ID, 'created_at': now}
        if i < len(rps):
            host, rp, hid = rps[i]
            inst = str(uuid.uuid4())
            instances.append(inst)
            row.update(state=arq_states.BOUND, hostname=host,
                       device_rp_uuid=rp,
                       instance_uuid=inst, attach_handle_id=hid)
            used.append(hid)
        else:
            row.update(state=arq_states.INITIAL)
        rows.append(row)
    with db.transaction() as s:
        s.execute(sa.insert(models.ARQ), rows)
        if used:
            s.execute(sa.update(models.AttachHandle)
                      .where(models.AttachHandle.id.in_(used))
                      .values(handle_states.columns(handle_states.BOUND)))


def _time(client, paths, reps):
    samples = []
    for i in range(reps):
        dt, _ = client.call('GET', paths(i))
        samples.append(dt)
    return common.summary(samples)


def measure_db(env):
    from accel_backend.db import api as db_api
    from accel_backend.db import models

    hosts = QUICK_HOSTS if env.quick else HOSTS
    steps = QUICK_ARQ_STEPS if env.quick else ARQ_STEPS
    reps = QUICK_REPS if env.quick else REPS
    empty = os.path.join(env.workdir, 'sysfs-empty')
    os.makedirs(empty, exist_ok=True)
    backend = accel_fx.start_reporting(
        env.workdir, env.placement, env.stub, 'scale', empty)
    db = db_api.Database(backend.connection)
    try:
        t0 = time.perf_counter()
        rps = _populate_devices(db, models, hosts)
        fill_s = time.perf_counter() - t0
        client = accel_client.AccelClient(backend.root)
        _, r = client.create_profile('scale-gpu', [{'resources:PGPU': '1'}])
        with db.transaction() as s:
            dp_row = s.execute(sa.select(models.DeviceProfile.id,
                                         models.DeviceProfile.uuid,
                                         models.DeviceProfile.name)).one()
        dp = {'id': dp_row[0], 'uuid': dp_row[1], 'name': dp_row[2]}
        for k in range(20):  # other profiles, so the lookup must filter
            client.create_profile('scale-other-%d' % k,
                                  [{'resources:PGPU': '2'}])
        rng = random.Random(42)
        instances, have, out = [], 0, {'hosts': hosts,
                                       'devices': hosts * DEVICES_PER_HOST,
                                       'insert_devices_s': fill_s,
                                       'steps': {}}
        host_names = sorted({h for h, _, _ in rps})
        for n in steps:
            _add_arqs(db, models, dp, rps, have, n, instances)
            have = n
            client.call('GET', '/v2/accelerator_requests?instance=%s'
                        % instances[0])  # warm
            step = {
                'arq_list_by_instance': _time(
                    client, lambda i: '/v2/accelerator_requests?instance=%s'
                    % rng.choice(instances), reps),
                'device_list_by_host': _time(
                    client, lambda i: '/v2/devices?hostname=%s'
                    % rng.choice(host_names), reps),
                'device_profile_by_name': _time(
                    client, lambda i: '/v2/device_profiles?name=scale-gpu',
                    reps),
                'device_profile_by_uuid': _time(
                    client, lambda i: '/v2/device_profiles/%s' % dp['uuid'],
                    reps),
                'arq_list_all': _time(
                    client, lambda i: '/v2/accelerator_requests',
                    max(3, reps // 10)),
            }
            out['steps'][n] = step
            env.log('  scale %d ARQs: by instance p50 %.1f ms, all %.0f ms'
                    % (n, step['arq_list_by_instance']['p50'],
                       step['arq_list_all']['p50']))
        return out
    finally:
        db.dispose()
        backend.cleanUp()


def measure_agent(env):
    """Initial report and no-change resync of 64 GPUs to Placement."""
    from accel_backend import conf as conf_mod
    from accel_backend import service as service_mod

    d = os.path.join(env.workdir, 'agent')
    count = QUICK_AGENT_DEVICES if env.quick else AGENT_DEVICES
    sysfs = sysfs_fx.make_sysfs(os.path.join(d, 'sysfs'), count)
    host = 'agent-node'
    env.placement.create_provider(host)
    path = os.path.join(d, 'accel-backend.conf')
    with open(path, 'w') as f:
        f.write(launch_accel.config(
            env.placement.endpoint, env.stub.endpoint, sysfs,
            [sysfs_fx.GPU_SPEC], DEFAULT={'host': host, 'state_path': d}))
    conf = conf_mod.new_conf(config_files=[path])
    svc = service_mod.Service(conf)
    try:
        out = {'devices': count}
        for key in ('initial', 'resync_no_change', 'resync_no_change_2'):
            before = svc.placement.calls
            t0 = time.perf_counter()
            records = svc.discover_and_report()
            out[key] = {'seconds': time.perf_counter() - t0,
                        'placement_calls': svc.placement.calls - before,
                        'providers': len(records)}
        root = env.placement.request(
            'GET', '/resource_providers?name=%s' % host)[
                'resource_providers'][0]['uuid']
        out['providers_in_placement'] = len(env.placement.providers(root)) - 1
        return out
    finally:
        svc.stop()


def measure(env):
    return {'db': measure_db(env), 'agent': measure_agent(env)}
