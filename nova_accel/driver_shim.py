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

"""Install the ``nova.virt.accel`` compute driver shim into Nova.

Nova 34 imports its compute driver only as ``nova.virt.<compute_driver>``
(nova, ``nova/virt/driver.py``, ``load_compute_driver``), so
``compute_driver = accel.LibvirtDriver`` needs a module ``nova.virt.accel``
inside the installed Nova package, wherever that is: a wheel in a venv
(kolla, OpenStack-Ansible), a source checkout installed editable
(devstack's ``setup_develop``), or distribution packages in
``dist-packages``.  A package shipped by this bundle's wheel would only be
found in the first layout, and would shadow Nova itself as a namespace
package in the others; so the bundle ships no ``nova/`` directory and this
explicit, idempotent step writes the shim into the ``nova/virt/`` directory
of the Nova that the running interpreter imports:

    nova-accel-driver-shim install    # or: remove, check

Run it with the Python of the nova-compute service (the venv's
``bin/nova-accel-driver-shim``), again after Nova is upgraded or
reinstalled.  ``install`` refuses to overwrite a ``nova/virt/accel`` that
it did not write.
"""

import argparse
import importlib.util
import os
import shutil
import sys

MARKER = '# nova-accel driver shim: written by nova-accel-driver-shim'
# The first line of the shim that nova-accel 0.1.0 shipped in its wheel:
# an upgrade replaces it.
LEGACY_FIRST_LINE = ('"""In-tree-style shim: ``[DEFAULT] compute_driver = '
                     'accel.<Driver>``.')

SHIM = '''%s
"""In-tree-style shim of nova-accel: ``[DEFAULT] compute_driver =
accel.LibvirtDriver`` (or ``accel.FakeDriver``).

Written into Nova's ``nova/virt/`` by ``nova-accel-driver-shim install``;
removed by ``nova-accel-driver-shim remove``.  The drivers live in the
nova_accel package; each is imported when Nova asks for it.
"""

import importlib

_DRIVERS = {
    'FakeDriver': 'nova_accel.virt.fake',
    'LibvirtDriver': 'nova_accel.virt.libvirt.driver',
}
__all__ = sorted(_DRIVERS)


def __getattr__(name):
    if name not in _DRIVERS:
        raise AttributeError(name)
    return getattr(importlib.import_module(_DRIVERS[name]), name)
''' % MARKER


class ShimError(Exception):
    """The shim cannot be installed or removed here (message says why)."""


def nova_virt_dir():
    """The ``nova/virt`` directory of the Nova this interpreter imports.

    :raises ShimError: Nova is not importable, or ``nova`` is not a
        regular package (a namespace package would mean a broken layout).
    """
    spec = importlib.util.find_spec('nova')
    if spec is None:
        raise ShimError('Nova is not importable by %s: install Nova first '
                        '(or run this with the Python of nova-compute)'
                        % sys.executable)
    if spec.origin is None or not spec.origin.endswith('__init__.py'):
        raise ShimError('nova is a namespace package here (%s), not Nova: '
                        'a stray nova/ directory shadows it; remove it'
                        % list(spec.submodule_search_locations or []))
    path = os.path.join(os.path.dirname(spec.origin), 'virt')
    if not os.path.isfile(os.path.join(path, 'driver.py')):
        raise ShimError('%s has no driver.py: not a Nova install' % path)
    return path


def shim_dir():
    """Where the shim goes: ``<nova>/virt/accel``."""
    return os.path.join(nova_virt_dir(), 'accel')


def _ours(path):
    init = os.path.join(path, '__init__.py')
    try:
        with open(init) as f:
            return f.readline().rstrip('\n') in (MARKER, LEGACY_FIRST_LINE)
    except OSError:
        return False


def status():
    """``'absent'``, ``'installed'``, ``'outdated'`` (ours, other text,
    e.g. the one nova-accel 0.1.0 shipped) or ``'foreign'`` (a
    ``nova/virt/accel`` we did not write).  A directory left without
    ``__init__.py`` (only byte code) counts as absent."""
    path = shim_dir()
    if not os.path.isfile(os.path.join(path, '__init__.py')):
        return 'absent'
    if not _ours(path):
        return 'foreign'
    with open(os.path.join(path, '__init__.py')) as f:
        return 'installed' if f.read() == SHIM else 'outdated'


def install():
    """Write the shim (idempotent).

    :returns: True when something was written, False when it was there.
    :raises ShimError: a foreign ``nova/virt/accel`` exists, or the
        directory is not writable.
    """
    state = status()
    if state == 'installed':
        return False
    if state == 'foreign':
        raise ShimError('%s exists and was not written by nova-accel; '
                        'refusing to overwrite it' % shim_dir())
    path = shim_dir()
    try:
        os.makedirs(path, exist_ok=True)
        tmp = os.path.join(path, '__init__.py.tmp')
        with open(tmp, 'w') as f:
            f.write(SHIM)
        os.replace(tmp, os.path.join(path, '__init__.py'))
    except OSError as e:
        raise ShimError('cannot write %s: %s' % (path, e))
    return True


def remove():
    """Remove the shim if this tool wrote it.

    :returns: True when removed, False when there was none.
    :raises ShimError: ``nova/virt/accel`` exists but is not ours.
    """
    state = status()
    if state == 'absent':
        return False
    if state == 'foreign':
        raise ShimError('%s was not written by nova-accel; not removing it'
                        % shim_dir())
    shutil.rmtree(shim_dir())
    return True


def main(argv=None):
    """``nova-accel-driver-shim install|remove|check``; exit 0 on success,
    1 on a ``ShimError`` (printed), 2 for ``check`` of a missing or
    outdated shim."""
    parser = argparse.ArgumentParser(
        prog='nova-accel-driver-shim',
        description='Install the nova.virt.accel compute driver shim into '
                    'the Nova this Python imports.')
    parser.add_argument('action', choices=['install', 'remove', 'check'])
    args = parser.parse_args(argv)
    try:
        if args.action == 'install':
            changed = install()
            print('%s %s' % ('installed' if changed else 'already installed:',
                             shim_dir()))
        elif args.action == 'remove':
            print('%s %s' % ('removed' if remove() else 'not installed:',
                             shim_dir()))
        else:
            state = status()
            print('%s: %s' % (shim_dir(), state))
            return 0 if state == 'installed' else 2
    except ShimError as e:
        print('nova-accel-driver-shim: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
