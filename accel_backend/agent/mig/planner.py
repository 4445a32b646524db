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

"""Repartitioning of a host's idle MIG GPUs toward a target of free GPU
instances (GIs).

Pure functions, deterministic: the same arguments give the same plan.
The rules are ``profiles``' (from NVIDIA's Multi-Instance GPU User Guide,
"Supported MIG Profiles" and "Getting Started with MIG"; see there).

A GPU with any GI in use is never touched: only idle GPUs (every GI
free, or none) are repartitioned, and each into one of the operator's
allowed layouts for its model, so a touched GPU ends in an allowed
layout.  The planner repartitions one idle GPU at a time, each time the
one whose new layout lowers the unmet target the most, until no change
lowers it.  Ties go, in order, to the change that leaves the fewest
profiles without any free GI, that keeps the most of the GPU's GIs where
they are, that gives the most GIs of the target's profiles, then to the
earlier allowed layout and the earlier GPU.
"""

import collections

from accel_backend.agent.mig import profiles

Step = collections.namedtuple('Step', ['action', 'gpu', 'profile', 'start',
                                       'gi_id'])
Step.__doc__ = """One step of a plan: ``action`` ``'destroy'`` (of GI
``gi_id``, int) or ``'create'`` (``gi_id`` None) of a GI of ``profile``
(str) at memory slice ``start`` (int) on ``gpu``."""

Plan = collections.namedtuple('Plan', ['steps', 'layouts'])
Plan.__doc__ = """A plan: ``steps`` (list of ``Step``, a GPU's destroys
before its creates, GPUs in order) and ``layouts`` (dict GPU -> list of
``(profile, start)`` sorted by start: every GPU's layout once the steps
are done, untouched GPUs included)."""


def _layout(gis):
    return sorted(((gi.profile, gi.start) for gi in gis),
                  key=lambda g: g[1])


def free_counts(instances, in_use):
    """Free GIs per profile.

    :param instances: dict GPU -> list of ``host.GpuInstance``.
    :param in_use: set of ``(gpu, gi id)`` of the GIs in use.
    :returns: ``collections.Counter`` profile -> number of free GIs.
    """
    return collections.Counter(
        gi.profile for gpu, gis in instances.items() for gi in gis
        if (gpu, gi.id) not in in_use)


def idle_gpus(instances, in_use):
    """The GPUs with no GI in use (sorted list): the only ones a plan
    may touch."""
    return sorted(gpu for gpu, gis in instances.items()
                  if not any((gpu, gi.id) in in_use for gi in gis))


def check_allowed(allowed):
    """Raise ``ValueError`` if an allowed layout breaks the MIG rules.

    :param allowed: dict model name -> list of layouts, each a list of
        profile names (repeats allowed).
    :raises exception.MigModelUnknown: a model has no profile table.
    """
    for model, layouts in sorted(allowed.items()):
        for names in layouts:
            if profiles.realize(model, list(names)) is None:
                raise ValueError('allowed layout %s of %s breaks the MIG '
                                 'rules' % (list(names), model))


def _unmet(free, target):
    return sum(max(0, n - free.get(p, 0)) for p, n in target.items())


def plan(instances, models, in_use, allowed, target):
    """The steps that move the host's free GIs toward ``target``.

    :param instances: dict GPU -> list of ``host.GpuInstance`` (its GIs
        now).
    :param models: dict GPU -> model name (a key of
        ``profiles.MODELS``).
    :param in_use: set of ``(gpu, gi id)``: the GIs in use.
    :param allowed: dict model name -> list of allowed layouts, each a
        list of profile names; GPUs of a model not in it are not
        touched.
    :param target: dict profile name -> the number of free GIs of it
        wanted on the host.
    :returns: a ``Plan``; no steps when the target is met or no
        repartitioning of an idle GPU gets closer to it.
    :raises ValueError: an allowed layout breaks the MIG rules.
    :raises exception.MigModelUnknown: a model has no profile table.
    """
    check_allowed(allowed)
    free = free_counts(instances, in_use)
    layouts = {gpu: _layout(gis) for gpu, gis in instances.items()}
    idle = [gpu for gpu in idle_gpus(instances, in_use)
            if models[gpu] in allowed]
    position = {gpu: i for i, gpu in enumerate(idle)}
    changed = set()
    while _unmet(free, target):
        base = _unmet(free, target)
        best_key, best = None, None
        for gpu in idle:
            if gpu in changed:
                continue
            current = layouts[gpu]
            gone = collections.Counter(p for p, _ in current)
            for index, names in enumerate(allowed[models[gpu]]):
                new = profiles.realize(models[gpu], list(names),
                                       prefer=current)
                after = free - gone + collections.Counter(names)
                gain = base - _unmet(after, target)
                if gain <= 0:
                    continue
                emptied = sum(1 for p in gone if free[p] and not after[p])
                kept = len(set(current) & set(new))
                supply = sum(1 for p in names if p in target)
                key = (gain, -emptied, kept, supply, -index, -position[gpu])
                if best_key is None or key > best_key:
                    best_key, best = key, (gpu, new, after)
        if best is None:
            break
        gpu, new, free = best
        layouts[gpu] = new
        changed.add(gpu)
    steps = []
    for gpu in sorted(changed):
        new = set(layouts[gpu])
        kept = set()
        for gi in sorted(instances[gpu], key=lambda g: g.start):
            if (gi.profile, gi.start) in new:
                kept.add((gi.profile, gi.start))
            else:
                steps.append(Step('destroy', gpu, gi.profile, gi.start,
                                  gi.id))
        for name, start in layouts[gpu]:
            if (name, start) not in kept:
                steps.append(Step('create', gpu, name, start, None))
    return Plan(steps, layouts)


def execute(host, the_plan):
    """Carry out ``the_plan`` on ``host`` (a ``host.MigHost``), step by
    step, creating each GI at its planned start.

    :returns: list of the ``host.GpuInstance`` created.
    :raises exception.MigLayoutRefused: the host refused a create (the
        plan was made from a stale view of the host).
    :raises exception.MigInstanceNotFound: a GI to destroy is gone.
    """
    created = []
    for step in the_plan.steps:
        if step.action == 'destroy':
            host.destroy(step.gpu, step.gi_id)
        else:
            created.append(host.create(step.gpu, step.profile, step.start))
    return created
