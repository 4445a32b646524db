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

"""MIG GPU instance profiles per GPU model, and the rules a GPU's layout
of GPU instances (GIs) must follow.

Sources, NVIDIA Multi-Instance GPU User Guide
(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/):

* "Supported MIG Profiles" (``supported-mig-profiles.html``): the
  tables "H100 MIG Profiles" (H100 80GB, PCIe and SXM5), "H200 MIG
  Profiles" (H200 141GB), "A100 MIG Profiles" (A100-SXM4-40GB, and the
  A100-SXM4-80GB names: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb,
  4g.40gb, 7g.80gb) and "B200 MIG Profiles" (B200 180 GB): each
  profile's fraction of memory (in eighths), fraction of SMs (in
  sevenths) and number of instances available.
* "Getting Started with MIG", section "List GPU Instance Profiles"
  (``getting-started-with-mig.html``): ``nvidia-smi mig -lgip`` and
  ``-lgipp`` on an A100-SXM4-40GB, the profile ids (19 1g.5gb,
  20 1g.5gb+me, 15 1g.10gb, 14 2g.10gb, 9 3g.20gb, 5 4g.20gb,
  0 7g.40gb) and the placements ``{<index>}:<GPU Slice Count>``:
  ``{0,1,2,3,4,5,6}:1`` for ids 19 and 20, ``{0,2,4,6}:2`` for 15,
  ``{0,2,4}:2`` for 14, ``{0,4}:4`` for 9, ``{0}:4`` for 5 and
  ``{0}:8`` for 0.  Its section "Instance Geometry" gives three mixed
  layouts the driver placed (``tests.unit.accel_backend.test_mig``
  checks them).
* "Supported GPUs": H100-SXM5 80GB, H200-SXM5 141GB, A100-SXM4 40GB
  and 80GB and B200 180GB, each at most 7 instances.

What is inferred rather than read: the guide lists placements only for
the A100-SXM4-40GB.  The other models' tables give, profile by profile
in the same order, the same memory fraction, SM fraction and instance
count (1g.5gb+me's twin always has one instance), so they take the
same placements.  For the H100 80GB this matches ``nvidia-smi mig
-lgipp`` as printed on H100 machines in third-party pages; for the H200
and the B200 we found no printed placements at all.  A100-40GB's table
writes 1/8 as 1g.10gb's memory fraction, but its placement
(``{0,2,4,6}:2``) and its 4 instances are two slices; the other models'
tables write 1/4 (two slices) for their twin.  Left out: A30 (four
slices, placements not published), H100 94GB and 96GB, H200 NVL, the
RTX PRO Blackwell and Thor parts; the profile ids of every model but
the A100-40GB (nvidia-smi takes profile names, see ``host``).

PCI device ids (vendor 10de): 2330 H100 SXM5 80GB and 2335 H200 are the
ids of the H100 and H200 in the hosts recorded in
``tests/unit/fixtures`` (``test_recorded_hosts``); 20b0 A100 SXM4 40GB
and 20b2 A100 SXM4 80GB are pci.ids' (``agent.discovery.pci_ids``).
B200 has none here: we have not verified one.
"""

import collections

from accel_backend import exception

#: Memory slices of every model here (the "8" of the tables' eighths).
MEMORY_SLICES = 8
#: Compute (SM) slices of every model here (the "7" of the sevenths).
COMPUTE_SLICES = 7

Profile = collections.namedtuple('Profile', [
    'name', 'memory_gb', 'compute_slices', 'memory_slices', 'starts',
    'max_count', 'profile_id'])
Profile.__doc__ = """One MIG GPU instance profile of one GPU model.

``name`` (str, ``'3g.71gb'``), ``memory_gb`` (int, the GB of the name),
``compute_slices`` (int, of 7), ``memory_slices`` (int, of 8: the
placement's size), ``starts`` (tuple of int: the memory slices a GI of
it may start at), ``max_count`` (int: instances available per GPU),
``profile_id`` (int, ``nvidia-smi``'s id, or None where unverified).
"""

Model = collections.namedtuple('Model', ['name', 'pci_ids', 'profiles'])
Model.__doc__ = """A GPU model: ``name`` (str), ``pci_ids`` (tuple of
``(vendor, device)`` lower-case hex str pairs) and ``profiles`` (dict
name -> ``Profile``, in the guide's order)."""

# (compute slices, memory slices, starts, instances) of the guide's
# seven rows, in its order; see the module docstring.
_GEOMETRY = (
    (1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
    (1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
    (1, 2, (0, 2, 4, 6), 4),
    (2, 2, (0, 2, 4), 3),
    (3, 4, (0, 4), 2),
    (4, 4, (0,), 1),
    (7, 8, (0,), 1),
)


def _model(name, pci_ids, names, ids=None):
    profiles = collections.OrderedDict()
    for i, (pname, geometry) in enumerate(zip(names, _GEOMETRY)):
        compute, memory, starts, count = geometry
        gb = int(pname.split('.')[1].split('gb')[0])
        profiles[pname] = Profile(pname, gb, compute, memory, starts, count,
                                  ids[i] if ids else None)
    return Model(name, tuple(pci_ids), profiles)


MODELS = collections.OrderedDict((m.name, m) for m in (
    _model('A100-SXM4-40GB', [('10de', '20b0')],
           ['1g.5gb', '1g.5gb+me', '1g.10gb', '2g.10gb', '3g.20gb',
            '4g.20gb', '7g.40gb'],
           ids=[19, 20, 15, 14, 9, 5, 0]),
    _model('A100-SXM4-80GB', [('10de', '20b2')],
           ['1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb',
            '4g.40gb', '7g.80gb']),
    _model('H100-SXM5-80GB', [('10de', '2330')],
           ['1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb',
            '4g.40gb', '7g.80gb']),
    _model('H200-SXM5-141GB', [('10de', '2335')],
           ['1g.18gb', '1g.18gb+me', '1g.35gb', '2g.35gb', '3g.71gb',
            '4g.71gb', '7g.141gb']),
    _model('B200-180GB', [],
           ['1g.23gb', '1g.23gb+me', '1g.45gb', '2g.45gb', '3g.90gb',
            '4g.90gb', '7g.180gb']),
))


def model(name):
    """The ``Model`` named ``name`` (str, a key of ``MODELS``).

    :raises exception.MigModelUnknown: no table for it.
    """
    try:
        return MODELS[name]
    except KeyError:
        raise exception.MigModelUnknown(ident=name)


def model_for_pci(vendor, device):
    """The name of the model whose PCI id is ``vendor:device`` (hex str,
    either case, with or without ``0x``).

    :raises exception.MigModelUnknown: none here has it.
    """
    key = (vendor.lower().replace('0x', ''), device.lower().replace('0x', ''))
    for m in MODELS.values():
        if key in m.pci_ids:
            return m.name
    raise exception.MigModelUnknown(ident='%s:%s' % key)


def profile(model_name, name):
    """The ``Profile`` ``name`` of model ``model_name``.

    :raises exception.MigModelUnknown: unknown model.
    :raises KeyError: the model has no such profile.
    """
    return model(model_name).profiles[name]


def slices(prof, start):
    """The memory slices (a range) a GI of ``prof`` at ``start`` holds."""
    return range(start, start + prof.memory_slices)


def layout_problems(model_name, layout):
    """Why ``layout`` breaks the rules on a GPU of ``model_name``, as a
    list of str (empty when it follows them).

    :param model_name: a key of ``MODELS``.
    :param layout: iterable of ``(profile name, start)``: the GIs of one
        GPU, ``start`` their first memory slice (int, 0 to 7).
    :raises exception.MigModelUnknown: unknown model.

    The rules: every profile is the model's; every start is one its
    profile allows; no two GIs share a memory slice; at most
    ``max_count`` GIs of a profile; at most ``COMPUTE_SLICES`` compute
    slices in all.
    """
    m = model(model_name)
    problems = []
    owner = {}
    counts = collections.Counter()
    compute = 0
    for name, start in layout:
        prof = m.profiles.get(name)
        if prof is None:
            problems.append('%s is not a profile of %s' % (name, m.name))
            continue
        if start not in prof.starts:
            problems.append('%s cannot start at slice %s (allowed: %s)' % (
                name, start, ', '.join(str(s) for s in prof.starts)))
            continue
        counts[name] += 1
        compute += prof.compute_slices
        for s in slices(prof, start):
            if s in owner:
                problems.append('%s at %d overlaps %s at memory slice %d' % (
                    name, start, owner[s], s))
                break
        for s in slices(prof, start):
            owner.setdefault(s, '%s at %d' % (name, start))
    for name, n in sorted(counts.items()):
        if n > m.profiles[name].max_count:
            problems.append('%d GIs of %s, at most %d' % (
                n, name, m.profiles[name].max_count))
    if compute > COMPUTE_SLICES:
        problems.append('%d compute slices, at most %d' % (
            compute, COMPUTE_SLICES))
    return problems


def valid_layout(model_name, layout):
    """True when ``layout`` (iterable of ``(profile name, start)``)
    follows the rules of ``layout_problems`` on a ``model_name`` GPU.

    :raises exception.MigModelUnknown: unknown model.
    """
    return not layout_problems(model_name, layout)


def placements(model_name, layout, name):
    """The starts (list of int, ascending) where a new GI of profile
    ``name`` fits on a ``model_name`` GPU that holds ``layout``
    (iterable of ``(profile name, start)``); empty if none, or if the
    profile is not the model's.

    :raises exception.MigModelUnknown: unknown model.
    """
    m = model(model_name)
    if name not in m.profiles:
        return []
    layout = list(layout)
    return [start for start in m.profiles[name].starts
            if valid_layout(model_name, layout + [(name, start)])]


def best_placement(model_name, layout, name):
    """The start of ``placements`` that leaves the GPU the most room: the
    one after which the most placements of all the model's profiles
    remain (the lowest start on a tie); None when none fits.

    The first fitting start can paint a GPU into a corner: a 3g.20gb at
    slice 0 of an A100 leaves room for one 2g.10gb and one 1g.5gb, at
    slice 4 for two of each (the driver put it at 4 in the guide's
    "Instance Geometry" examples).

    :raises exception.MigModelUnknown: unknown model.
    """
    layout = list(layout)
    best, best_room = None, -1
    for start in placements(model_name, layout, name):
        after = layout + [(name, start)]
        room = sum(len(placements(model_name, after, other))
                   for other in model(model_name).profiles)
        if room > best_room:
            best, best_room = start, room
    return best


def realize(model_name, names, prefer=()):
    """Starts for a GPU holding exactly the profiles ``names`` (list of
    str, repeats allowed): a layout (list of ``(profile name, start)``,
    sorted by start) that follows the rules, or None when none does.

    :param prefer: ``(profile name, start)`` pairs to keep where they
        fit (the GPU's current GIs), tried before other starts.
    :raises exception.MigModelUnknown: unknown model.

    Deterministic: the largest profiles are placed first, each at its
    preferred starts and then at its allowed starts in order, with
    backtracking.
    """
    m = model(model_name)
    if any(n not in m.profiles for n in names):
        return None
    preferred = collections.defaultdict(list)
    for n, s in prefer:
        preferred[n].append(s)
    order = sorted(names, key=lambda n: (-m.profiles[n].memory_slices,
                                         -m.profiles[n].compute_slices, n))

    def place(i, layout):
        if i == len(order):
            return layout
        n = order[i]
        starts = ([s for s in preferred[n] if s in m.profiles[n].starts] +
                  list(m.profiles[n].starts))
        seen = set()
        for s in starts:
            if s in seen:
                continue
            seen.add(s)
            candidate = layout + [(n, s)]
            if valid_layout(model_name, candidate):
                found = place(i + 1, candidate)
                if found is not None:
                    return found
        return None

    found = place(0, [])
    return None if found is None else sorted(found, key=lambda g: g[1])
