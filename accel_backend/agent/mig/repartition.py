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

"""Idle MIG GPUs repartitioned to meet demand (issue 54 item 3), by the
agent (or the embedded service) after its discovery pass, for the
``nvidia_vgpu`` driver's MIG-backed vGPUs.

The operator lists the layouts a GPU model may take (``[nvidia_vgpu]
mig_layouts``) and the free GPU instances (GIs) wanted per MIG profile
(``[nvidia_vgpu] mig_free_target``).  ``agent.mig.planner`` chooses which
idle GPUs to repartition into which allowed layout.  For each GPU, in
this order, every step written before the next is acted on:

1. **hold** (``conductor.mig_hold.hold``, one transaction): none of the
   GPU's attach handles is anything but ``available``, and its
   deployables are tainted ``NoSchedule``
   (``accel_common.taints.REPARTITION_KEY``): from the commit on the
   claim gives none of them away.  A GPU not idle is left alone, and the
   plan made again without it.
2. **reserve** its providers in Placement at once and read their usages:
   an allocation there (a bind under way when the hold committed comes
   from one) releases the hold and leaves the GPU alone.  Placement's
   inventory is never changed under an allocation.
3. **checkpoint** ``$state_path/mig-repartition.json`` (the GPU, its
   address and its new layout; written to a temporary file, then
   renamed).
4. **carve**: the VFs' vGPUs destroyed (``nvidia_vfio.clear``; none is a
   guest's: nothing was bound), the GIs not in the new layout destroyed,
   the missing ones created (``host.MigHost``).
5. the checkpoint removed, the hold **released**; the caller runs its
   discovery pass again, which gives the VFs the new GIs' types and
   reports the slices (``drivers.nvidia_vgpu``).

A crash after 3 is finished at the next start (the same layout, from
the checkpoint: steps 4 and 5 are idempotent); a crash between 1 and 3
leaves a hold without a checkpoint, which the first pass releases.  A
GPU whose MIG mode toggle needs a reset is never switched: only GIs are
created and destroyed, MIG mode is left as it is.
"""

import json
import os

from oslo_config import cfg
from oslo_log import log as logging

from accel_backend.agent.discovery import nvidia_vfio
from accel_backend.agent.discovery import sysfs
from accel_backend.agent.mig import host as mig_host
from accel_backend.agent.mig import planner
from accel_backend.agent.mig import profiles
from accel_backend import exception

LOG = logging.getLogger(__name__)
CHECKPOINT = 'mig-repartition.json'


class Repartitioner:
    """Repartitions a host's idle MIG GPUs toward a target.

    :param host: a ``host.MigHost``.
    :param addresses: ``{GPU id: PF address}`` of ``host``'s GPUs.
    :param store: the host's ``conductor.store.HostStore`` (or the
        agent's remote one): ``hold_gpu``, ``release_gpu``.
    :param reporter: ``agent.placement.report.Reporter``: its
        ``reserved`` writer and Placement client.
    :param sysfs_root: ``[discovery] sysfs_root`` (str).
    :param allowed: ``{model: [[profile, ...], ...]}`` (``[nvidia_vgpu]
        mig_layouts``).
    :param target: ``{profile: free GIs wanted}`` (``[nvidia_vgpu]
        mig_free_target``).
    :param state_path: where the checkpoint lives (str).

    ``replaced``: see ``__init__``.
    """

    def __init__(self, host, addresses, store, reporter, sysfs_root,
                 allowed, target, state_path):
        self.host = host
        self.addresses = dict(addresses)
        self.store = store
        self.reporter = reporter
        self.root = sysfs_root
        self.allowed = allowed
        self.target = dict(target)
        self.checkpoint = os.path.join(state_path, CHECKPOINT)
        self._started = False
        self._unlisted = set()
        #: The rp UUIDs of the carved GPUs' deployables: the caller's
        #: next report deletes those no longer found without counting
        #: them as a mass removal (``report.Reporter.report``).
        self.replaced = set()

    def run(self):
        """Finish an interrupted repartition, then repartition what the
        plan asks for.

        :returns: the GPU ids repartitioned (list; empty: nothing
            changed on the host).
        :raises MigCommandFailed, MigLayoutRefused: the host failed; the
            checkpoint stays and the next pass finishes it.
        """
        self.replaced = set()
        done = self._resume()
        busy = set()
        while True:
            instances = self._instances()
            in_use = {(gpu, gi.id) for gpu in busy
                      for gi in instances.get(gpu, ())}
            plan = planner.plan(
                instances, {g: self.host.model(g) for g in instances},
                in_use, self.allowed, self.target)
            todo = sorted({step.gpu for step in plan.steps} - set(done))
            if not todo:
                return done
            gpu = todo[0]
            if self._repartition(gpu, plan.layouts[gpu]):
                done.append(gpu)
            else:
                busy.add(gpu)

    def _instances(self):
        """``{GPU: its GIs}`` of the GPUs whose GIs can be listed; one
        that cannot (not in MIG mode: ``nvidia-smi`` refuses ``-lgi``)
        is left out, warned once."""
        found = {}
        for gpu in self.host.gpus():
            if gpu not in self.addresses:
                continue
            try:
                found[gpu] = self.host.instances(gpu)
            except exception.MigCommandFailed as e:
                if gpu not in self._unlisted:
                    self._unlisted.add(gpu)
                    LOG.warning('GPU %s: its GPU instances cannot be '
                                'listed (%s); not repartitioned',
                                self.addresses[gpu], e)
        return found

    def _repartition(self, gpu, layout):
        """Steps 1 to 5 for one GPU; False when it is not idle."""
        address = self.addresses[gpu]
        rps = self.store.hold_gpu(address)
        if rps is None:
            LOG.info('MIG GPU %s is in use: not repartitioned', address)
            return False
        for rp_uuid in rps:
            self.reporter.reserved.sync_reserved(rp_uuid)
        if any(self._usages(rp_uuid) for rp_uuid in rps):
            LOG.info('MIG GPU %s has an allocation in Placement: not '
                     'repartitioned', address)
            self._release(address)
            return False
        self._write_checkpoint({'gpu': gpu, 'address': address,
                                'layout': [list(g) for g in layout]})
        self._carve(gpu, address, layout)
        return True

    def _resume(self):
        """A checkpoint's repartition finished; at the first run
        without one, the holds a crash left released.  :returns: the
        GPUs finished (list)."""
        started, self._started = self._started, True
        try:
            with open(self.checkpoint) as f:
                saved = json.load(f)
        except FileNotFoundError:
            if not started:
                for address in sorted(self.addresses.values()):
                    self._release(address)
            return []
        gpu = next((g for g, a in self.addresses.items()
                    if a == saved['address']), None)
        if gpu is None:
            LOG.warning('MIG repartition of GPU %s not finished: the GPU '
                        'is gone; dropped', saved['address'])
            os.unlink(self.checkpoint)
            self._release(saved['address'])
            return []
        LOG.warning('Finishing the MIG repartition of GPU %s into %s',
                    saved['address'], saved['layout'])
        self._carve(gpu, saved['address'],
                    [tuple(g) for g in saved['layout']])
        return [gpu]

    def _carve(self, gpu, address, layout):
        """Step 4 and 5: idempotent."""
        for vf in _vfs(self.root, address):
            nvidia_vfio.clear(self.root, vf)
        want = {(profile, start) for profile, start in layout}
        for gi in self.host.instances(gpu):
            if (gi.profile, gi.start) not in want:
                self.host.destroy(gpu, gi.id)
        have = {(gi.profile, gi.start) for gi in self.host.instances(gpu)}
        for profile, start in sorted(want - have, key=lambda g: g[1]):
            self.host.create(gpu, profile, start)
        LOG.warning('Repartitioned MIG GPU %s into %s', address,
                    ', '.join('%s@%d' % g for g in sorted(
                        want, key=lambda g: g[1])))
        os.unlink(self.checkpoint)
        # Its providers of the old layout's types go at the next report,
        # however many (not a mass removal: ``replaced``).
        self.replaced.update(self._release(address))

    def _release(self, address):
        """Release the hold of ``address``, its providers' reserved
        units written; returns their rp UUIDs (list)."""
        rps = self.store.release_gpu(address) or []
        for rp_uuid in rps:
            self.reporter.reserved.sync_reserved(rp_uuid)
        return rps

    def _usages(self, rp_uuid):
        resp = self.reporter.client.get(
            '/resource_providers/%s/usages' % rp_uuid, ok=(200, 404))
        return resp.status_code == 200 and any(
            resp.json()['usages'].values())

    def _write_checkpoint(self, data):
        tmp = self.checkpoint + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.checkpoint)


def _vfs(root, address):
    """The VF addresses of the PF ``address`` (sorted list)."""
    base = os.path.join(root, address)
    try:
        names = os.listdir(base)
    except OSError:
        return []
    return sorted(os.path.basename(os.readlink(os.path.join(base, n)))
                  for n in names if n.startswith('virtfn'))


def nvidia_smi_host(conf, run=None):
    """The host's MIG GPUs through ``nvidia-smi`` (``[discovery]
    nvidia_smi_path``): ``(host.NvidiaSmiMigHost, {index: PF address})``
    of the GPUs whose model has a MIG table (``profiles``); a GPU not in
    MIG mode answers ``-lgi`` with an error, which ``run`` logs.

    :raises MigCommandFailed: nvidia-smi failed.
    """
    run = run or mig_host.run_command
    binary = conf.discovery.nvidia_smi_path
    indexes = mig_host.parse_bus_ids(run(
        [binary, '--query-gpu=index,pci.bus_id', '--format=csv,noheader']))
    models, addresses = {}, {}
    for address, index in sorted(indexes.items()):
        fn = sysfs.read_function(conf.discovery.sysfs_root, address)
        try:
            models[index] = profiles.model_for_pci(fn.vendor_id,
                                                   fn.product_id)
        except (AttributeError, exception.MigModelUnknown):
            continue
        addresses[index] = address
    return mig_host.NvidiaSmiMigHost(models, run=run,
                                     binary=binary), addresses


def from_conf(conf, store, reporter, host_factory=nvidia_smi_host):
    """The service's ``Repartitioner``, or None when ``[nvidia_vgpu]
    mig_free_target`` or ``mig_layouts`` is empty or the ``nvidia_vgpu``
    driver is not enabled.

    :param host_factory: ``(conf) -> (MigHost, {GPU id: PF address})``,
        called at the first pass.
    :raises oslo_config.cfg.ConfigFileValueError: a layout of an unknown
        model, or one the MIG rules refuse.
    """
    allowed = {}
    for model, names in conf.nvidia_vgpu.mig_layouts or ():
        allowed.setdefault(model, []).append(names)
    try:
        planner.check_allowed(allowed)
    except (ValueError, exception.MigModelUnknown) as e:
        # Refused as oslo.config refuses a value it cannot read.
        raise cfg.ConfigFileValueError(
            '[nvidia_vgpu] mig_layouts: %s' % e)
    if not (allowed and conf.nvidia_vgpu.mig_free_target and
            'nvidia_vgpu' in conf.discovery.enabled_drivers):
        return None
    return LazyRepartitioner(
        lambda: host_factory(conf), store, reporter,
        conf.discovery.sysfs_root, allowed,
        conf.nvidia_vgpu.mig_free_target, conf.state_path)


class LazyRepartitioner:
    """A ``Repartitioner`` whose MIG host is found at its first run
    (``host_factory``: nvidia-smi is asked then, not at the start)."""

    def __init__(self, host_factory, *args):
        self.host_factory = host_factory
        self.args = args
        self.inner = None

    @property
    def replaced(self):
        """``Repartitioner.replaced`` (set)."""
        return self.inner.replaced if self.inner is not None else set()

    def run(self):
        """``Repartitioner.run``, the host found first.  A failure is
        logged, never raised: the discovery pass that called it stands,
        and the next pass tries again (finishing a checkpoint first).

        :returns: the GPU ids repartitioned (list).
        """
        try:
            if self.inner is None:
                host, addresses = self.host_factory()
                self.inner = Repartitioner(host, addresses, *self.args)
            return self.inner.run()
        except Exception:
            LOG.exception('MIG repartition failed; the next discovery '
                          'pass tries again')
            return []
