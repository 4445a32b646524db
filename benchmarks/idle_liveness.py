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

"""The two latencies an idle cloud's cut must not make worse
(``benchmarks.idle --liveness``), on a cloud of one host whose agent
reports 8 GPUs of a recorded sysfs tree, one provider each
(``growth.LAYOUTS['per_device']``), with the default ``[discovery]
report_interval``:

* a changed device: one GPU's directory removed from the agent's sysfs
  tree; seconds until Placement no longer has its provider (polled every
  0.5 s).  Bounded by the report interval: the agent looks at sysfs once
  per pass;
* a dead agent: SIGKILL; seconds until the broker has no consumer on any
  queue of that host (polled with ``rabbitmqctl``, about a second a
  look), and the age of the host's last status (``objects.host_status``
  ``updated_at``, renewed by every pass: what ``accel-backend-manage
  discovery status`` shows) at the kill, with the beat's interval: a
  monitor that alerts when that age passes twice the interval notices
  at most that long after the kill.
"""

import shutil
import time

import sqlalchemy as sa

from accel_backend.db import models
from benchmarks import growth
from tests import waiting
from tools.fixtures import sysfs as sysfs_fx

WAIT = 300


def _children(cloud, host):
    root = cloud.roots[host]
    found = cloud.placement.request(
        'GET', '/resource_providers?in_tree=%s' % root)
    return {rp['uuid'] for rp in found['resource_providers']
            if rp['uuid'] != root}


def device_removed(cloud, host):
    """Remove the last GPU of the tree; seconds until Placement lost one
    of ``host``'s providers (float)."""
    before = _children(cloud, host)
    path = '%s/%s' % (cloud.conf.sysfs_root,
                      sysfs_fx.gpu_address(growth.DEVICES - 1))
    t0 = time.monotonic()
    shutil.rmtree(path)
    waiting.wait_for('a provider gone', lambda: len(
        _children(cloud, host)) < len(before), WAIT, interval=0.5)
    return time.monotonic() - t0


def _consumers(cloud, host):
    out = cloud.rabbit.ctl('list_queues', '-q', '-p', 'accel', 'name',
                           'consumers')
    return sum(int(parts[1]) for parts in (
        line.split() for line in out.splitlines())
        if len(parts) == 2 and host in parts[0] and parts[1].isdigit())


def agent_killed(cloud, host):
    """SIGKILL ``host``'s agent; ``{'broker_s', 'beat_age_at_kill_s'}``."""
    with cloud.db.connect() as conn:
        beat = conn.execute(sa.select(models.HostStatus.updated_at).where(
            models.HostStatus.hostname == host)).scalar_one()
        now = conn.execute(sa.text(
            "SELECT timezone('utc', now())")).scalar_one()
    agent = cloud.agents[host]
    t0 = time.monotonic()
    agent.proc.kill()
    agent.proc.wait()
    waiting.wait_for('no consumer of %s' % host,
                     lambda: _consumers(cloud, host) == 0, WAIT, interval=0)
    return {'broker_s': time.monotonic() - t0,
            'beat_age_at_kill_s': (now - beat).total_seconds()}


def measure(options):
    """Both latencies on a fresh one-host cloud started with ``options``
    (``growth.Cloud``'s); returns a dict."""
    host = growth.host_name(0)
    interval = options['discovery']['report_interval']
    with growth.Cloud([host], layout='per_device',
                      options=options) as cloud:
        growth.startup(cloud)
        time.sleep(1)
        out = {'report_interval_s': interval,
               'device_removed_s': device_removed(cloud, host)}
        out.update(agent_killed(cloud, host))
    out['beat_notice_bound_s'] = 2 * interval
    return out
