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

"""The host side of MIG: a host's MIG-enabled GPUs and their GPU
instances (GIs), created and destroyed.

``MigHost`` is the interface; ``SimulatedMigHost`` keeps the GIs in
memory under the rules of ``profiles``; ``NvidiaSmiMigHost`` drives
``nvidia-smi mig`` as the NVIDIA Multi-Instance GPU User Guide shows it
(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/, "Getting
Started with MIG": "Creating GPU Instances", "Instance Geometry" and
"Destroying GPU Instances"):

* ``nvidia-smi mig -i <gpu> -cgi <profile>[:<start>] -C`` creates a GI
  and its default compute instance (``-C``); the guide accepts a
  profile id, a short name (``3g.20gb``) or a full name; we pass the
  short name, whose meaning does not depend on the model.  The
  ``:<start>`` placement suffix ("a colon and a placement start index")
  is nvidia-smi's own ``--help`` wording as quoted by third-party
  wrappers; the guide's pages do not show it.
* ``nvidia-smi mig -i <gpu> -lgi`` lists the GIs: a table of ``GPU``,
  ``Name``, ``Profile ID``, ``Instance ID`` and ``Placement
  Start:Size``.
* ``nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader``
  names each GPU's index and PCI address (nvidia-smi's ``--help-query-
  gpu``: ``pci.bus_id`` is ``domain:bus:device.function`` in hex, the
  domain written with 8 digits: ``0, 00000000:CA:00.0``).
* ``nvidia-smi mig -i <gpu> -dci -gi <id>`` then ``-dgi -gi <id>``
  destroys one: the guide destroys the compute instances before their GI
  (``-dci -ci 0,1,2 -gi 1``, then ``-dgi``, which without ``-gi``
  destroys them all); ``-gi`` names the GI as it does for ``-dci``.

Nothing here enables or disables MIG mode.
"""

import abc
import collections
import re
import subprocess

from accel_backend.agent.mig import profiles
from accel_backend import exception

GpuInstance = collections.namedtuple('GpuInstance', ['id', 'profile',
                                                     'start'])
GpuInstance.__doc__ = """One GPU instance: ``id`` (int, the GI id on its
GPU), ``profile`` (str, the short profile name, ``'3g.71gb'``) and
``start`` (int, its first memory slice)."""


class MigHost(metaclass=abc.ABCMeta):
    """A host's MIG-enabled GPUs.  A GPU id is what the host names it by
    (``nvidia-smi``'s index for ``NvidiaSmiMigHost``)."""

    @abc.abstractmethod
    def gpus(self):
        """The host's MIG GPUs: a sorted list of GPU ids."""

    @abc.abstractmethod
    def model(self, gpu):
        """The GPU's model: a key of ``profiles.MODELS`` (str)."""

    @abc.abstractmethod
    def instances(self, gpu):
        """The GPU's GIs: a list of ``GpuInstance`` sorted by start."""

    @abc.abstractmethod
    def create(self, gpu, profile, start=None):
        """Create a GI of ``profile`` (short name, str) on ``gpu``, at
        memory slice ``start`` (int) or, when None, at
        ``profiles.best_placement``.

        :returns: the ``GpuInstance`` created.
        :raises exception.MigLayoutRefused: the rules of ``profiles``
            refuse it.
        """

    @abc.abstractmethod
    def destroy(self, gpu, gi_id):
        """Destroy the GI ``gi_id`` (int) of ``gpu``.

        :raises exception.MigInstanceNotFound: there is none.
        """

    def layout(self, gpu):
        """The GPU's layout: a list of ``(profile, start)`` sorted by
        start, as ``profiles.layout_problems`` takes it."""
        return [(gi.profile, gi.start) for gi in self.instances(gpu)]

    def _check_create(self, gpu, profile, start):
        """The start to create at, checked against the rules.

        :raises exception.MigLayoutRefused: no start fits, or the one
            asked for does not.
        """
        model = self.model(gpu)
        layout = self.layout(gpu)
        if start is None:
            fit = profiles.best_placement(model, layout, profile)
            if fit is None:
                known = profiles.model(model).profiles.get(profile)
                raise exception.MigLayoutRefused(
                    gpu=gpu, profile=profile, start=start,
                    reason=('no free placement among starts %s' % (
                        list(known.starts),) if known else
                        '%s is not a profile of %s' % (profile, model)))
            return fit
        problems = profiles.layout_problems(model, layout + [(profile, start)])
        if problems:
            raise exception.MigLayoutRefused(
                gpu=gpu, profile=profile, start=start,
                reason='; '.join(problems))
        return start


class SimulatedMigHost(MigHost):
    """GPUs and GIs in memory, under the rules of ``profiles``.

    :param models: dict GPU id -> model name (a key of
        ``profiles.MODELS``).
    :raises exception.MigModelUnknown: a model has no table.

    GI ids are the smallest unused positive integers of their GPU, as a
    stand-in for the driver's.  ``calls`` lists every change made:
    ``('create', gpu, profile, start, id)`` and ``('destroy', gpu,
    profile, start, id)``.
    """

    def __init__(self, models):
        for name in models.values():
            profiles.model(name)
        self._models = dict(models)
        self._gis = {gpu: {} for gpu in models}
        self.calls = []

    def gpus(self):
        return sorted(self._models)

    def model(self, gpu):
        return self._models[gpu]

    def instances(self, gpu):
        return sorted(self._gis[gpu].values(), key=lambda gi: gi.start)

    def create(self, gpu, profile, start=None):
        start = self._check_create(gpu, profile, start)
        gi_id = 1
        while gi_id in self._gis[gpu]:
            gi_id += 1
        gi = GpuInstance(gi_id, profile, start)
        self._gis[gpu][gi_id] = gi
        self.calls.append(('create', gpu, profile, start, gi_id))
        return gi

    def destroy(self, gpu, gi_id):
        gi = self._gis[gpu].pop(gi_id, None)
        if gi is None:
            raise exception.MigInstanceNotFound(gpu=gpu, ident=gi_id)
        self.calls.append(('destroy', gpu, gi.profile, gi.start, gi_id))


#: What ``nvidia-smi mig -lgi`` prints for a GPU without GIs.
NO_INSTANCES = 'No GPU instances found'
_LGI_ROW = re.compile(
    r'^\|\s*(?P<gpu>\d+)\s+MIG\s+(?P<profile>\S+)\s+(?P<profile_id>\d+)\s+'
    r'(?P<id>\d+)\s+(?P<start>\d+):(?P<size>\d+)\s*\|\s*$')
_CREATED = re.compile(
    r'Successfully created GPU instance ID\s+(?P<id>\d+)\s+on GPU\s+'
    r'(?P<gpu>\d+)\s+using profile MIG\s+(?P<profile>\S+)')


def parse_lgi(text):
    """The GIs of ``nvidia-smi mig -lgi`` output.

    :param text: the output (str).
    :returns: list of ``(gpu index (int), profile id (int),
        GpuInstance)``, in the output's order; empty for "No GPU
        instances found" and the like.
    :raises exception.MigCommandFailed: a row naming a MIG profile that
        the parser cannot read.
    """
    found = []
    for line in text.splitlines():
        line = line.strip()
        match = _LGI_ROW.match(line)
        if match:
            found.append((int(match.group('gpu')),
                          int(match.group('profile_id')),
                          GpuInstance(int(match.group('id')),
                                      match.group('profile'),
                                      int(match.group('start')))))
        elif line.startswith('|') and ' MIG ' in line:
            raise exception.MigCommandFailed(
                command='nvidia-smi mig -lgi',
                reason='unreadable row %r' % line)
    return found


def run_command(argv):
    """Run ``argv`` (list of str) and return its standard output (str).

    :raises exception.MigCommandFailed: it could not start or exited
        with a non-zero status.
    """
    try:
        proc = subprocess.run(argv, capture_output=True, text=True,
                              check=False)
    except OSError as e:
        raise exception.MigCommandFailed(command=' '.join(argv),
                                         reason=str(e))
    if proc.returncode != 0:
        raise exception.MigCommandFailed(
            command=' '.join(argv), reason='exit status %d: %s' % (
                proc.returncode, (proc.stdout + proc.stderr).strip()))
    return proc.stdout


def parse_bus_ids(text):
    """``{PCI address (``DDDD:BB:SS.F``, lower case): index (int)}`` of
    ``nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader``
    output.

    :raises exception.MigCommandFailed: a line it cannot read.
    """
    found = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        index, _, bus_id = (p.strip() for p in line.partition(','))
        domain, _, rest = bus_id.lower().partition(':')
        try:
            found['%04x:%s' % (int(domain, 16), rest)] = int(index)
        except ValueError:
            raise exception.MigCommandFailed(
                command='nvidia-smi --query-gpu=index,pci.bus_id',
                reason='unreadable line %r' % line)
    return found


def instances_at(pci_address, model_name, run=None, binary='nvidia-smi'):
    """The GIs (list of ``GpuInstance``, by start) of the GPU at
    ``pci_address`` (str, ``DDDD:BB:SS.F``), of model ``model_name``.

    :param run: as for ``NvidiaSmiMigHost``.
    :raises exception.MigCommandFailed: nvidia-smi failed, or does not
        list a GPU at that address.
    """
    run = run or run_command
    indexes = parse_bus_ids(run([binary, '--query-gpu=index,pci.bus_id',
                                 '--format=csv,noheader']))
    if pci_address.lower() not in indexes:
        raise exception.MigCommandFailed(
            command='nvidia-smi --query-gpu=index,pci.bus_id',
            reason='no GPU at %s' % pci_address)
    index = indexes[pci_address.lower()]
    return NvidiaSmiMigHost({index: model_name}, run=run,
                            binary=binary).instances(index)


class NvidiaSmiMigHost(MigHost):
    """GIs through ``nvidia-smi mig`` (see the module docstring for the
    command lines).

    :param models: dict GPU id (``nvidia-smi``'s index, int or str) ->
        model name; discovery knows each GPU's PCI id
        (``profiles.model_for_pci``).
    :param run: callable taking an argv (list of str) and returning the
        standard output (str), raising ``exception.MigCommandFailed``
        on failure; ``run_command`` by default.
    :param binary: the nvidia-smi to run (str).

    Every create is checked against ``profiles`` first, so a layout the
    rules refuse never reaches the driver.
    """

    def __init__(self, models, run=None, binary='nvidia-smi'):
        for name in models.values():
            profiles.model(name)
        self._models = dict(models)
        self._run = run or run_command
        self._binary = binary

    def _mig(self, gpu, *args):
        return self._run([self._binary, 'mig', '-i', str(gpu)] +
                         [str(a) for a in args])

    def gpus(self):
        return sorted(self._models)

    def model(self, gpu):
        return self._models[gpu]

    def instances(self, gpu):
        try:
            out = self._mig(gpu, '-lgi')
        except exception.MigCommandFailed as e:
            # A GPU without GIs: nvidia-smi says so, perhaps with a
            # non-zero exit status.
            if NO_INSTANCES in e.kwargs.get('reason', ''):
                return []
            raise
        return sorted((gi for _, _, gi in parse_lgi(out)),
                      key=lambda gi: gi.start)

    def create(self, gpu, profile, start=None):
        start = self._check_create(gpu, profile, start)
        spec = '%s:%d' % (profile, start)
        out = self._mig(gpu, '-cgi', spec, '-C')
        match = _CREATED.search(out)
        if match is None:
            raise exception.MigCommandFailed(
                command='nvidia-smi mig -i %s -cgi %s -C' % (gpu, spec),
                reason='no "Successfully created GPU instance" in %r' % out)
        gi_id = int(match.group('id'))
        for gi in self.instances(gpu):
            if gi.id == gi_id:
                return gi
        raise exception.MigCommandFailed(
            command='nvidia-smi mig -i %s -lgi' % gpu,
            reason='GPU instance %d, just created, is not listed' % gi_id)

    def destroy(self, gpu, gi_id):
        if gi_id not in [gi.id for gi in self.instances(gpu)]:
            raise exception.MigInstanceNotFound(gpu=gpu, ident=gi_id)
        try:
            self._mig(gpu, '-dci', '-gi', gi_id)
        except exception.MigCommandFailed:
            # A GI without compute instances: -dgi below says if it is
            # anything else.
            pass
        self._mig(gpu, '-dgi', '-gi', gi_id)
