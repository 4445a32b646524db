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

"""What each periodic thing an idle agent does costs the control plane
(``benchmarks.idle --calls N``): the slope of the idle background per
host, taken apart.

An idle agent, every ``[discovery] report_interval``, runs a discovery
pass: one Placement ``GET /resource_providers?in_tree=`` (its view of the
compute node's tree), the conductor calls ``sync_host`` (what it found;
no write when nothing changed) and ``record_status`` (the liveness beat:
one ``UPDATE`` of its ``host_status`` row); every ``[cleaning]
poll_interval`` its cleaner calls ``handles_to_clean``.  Each is sent
``N`` times in a row from this process, as the agent sends it (the
conductor RPC client of ``conductor.rpcapi`` on the agent's own
configuration, over the same broker), and the CPU of every component
(``growth_binds.cpu_by_component``) is read around them: CPU
milliseconds per call by component.
"""

from accel_backend.agent.discovery import drivers as drivers_mod
from accel_backend.conductor import rpcapi as conductor_rpcapi
from accel_backend import conf as accel_conf
from accel_backend import transports
from benchmarks import growth_binds as binds


def _per_call(cloud, fn, calls):
    before = binds.cpu_by_component(cloud)
    for _ in range(calls):
        fn()
    after = binds.cpu_by_component(cloud)
    return {k: 1000.0 * (after[k] - before[k]) / calls for k in before}


def costs(cloud, host, calls=100):
    """CPU milliseconds per call by component of each periodic call of
    ``host``'s agent (its agent running, its first pass done).

    :returns: ``{call: {component: ms}}``; calls ``sync_host``,
        ``record_status``, ``handles_to_clean`` and ``placement_in_tree``.
    """
    agent = cloud.agents[host]
    conf = accel_conf.new_conf(config_files=[agent.config_file])
    transport = transports.get_rpc_transport(conf)
    try:
        store = conductor_rpcapi.RemoteHostStore(
            conductor_rpcapi.ConductorAPI.from_conf(conf, transport), host)
        found = drivers_mod.discover_all(
            drivers_mod.load(conf, conf.discovery.enabled_drivers),
            span_numa=conf.discovery.pool_numa_span,
            keep_spanning=lambda name: False)
        tree = '/resource_providers?in_tree=%s' % cloud.roots[host]
        cases = {
            'sync_host': lambda: store.sync(found),
            'record_status': lambda: store.record_status('ok'),
            'handles_to_clean': store.handles_to_clean,
            'placement_in_tree': lambda: cloud.placement.request('GET',
                                                                 tree)}
        return {name: _per_call(cloud, fn, calls)
                for name, fn in cases.items()}
    finally:
        transport.cleanup()


def per_host_ms_per_s(per_call, report_interval, poll_interval):
    """The idle background of one host these costs predict, CPU ms per
    second (float): a pass's three calls every ``report_interval``
    seconds, a cleaner's look every ``poll_interval``."""
    def total(name):
        return sum(per_call[name].values())
    return ((total('sync_host') + total('record_status') +
             total('placement_in_tree')) / report_interval +
            total('handles_to_clean') / poll_interval)
