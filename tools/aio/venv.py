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

"""The all-in-one cloud's virtual environment, kept in the cache dir.

The OpenStack services are pinned to one release that co-installs (checked
with ``pip check``): Keystone 30, Glance 33, Nova 34, Placement 16 share
their oslo libraries.  The venv is rebuilt only when ``REQUIREMENTS``, the
bundle's own ``install_requires`` (``setup.cfg``) or the Python change;
this bundle is reinstalled (``--no-deps``) on every ``up`` so the cloud
runs the working tree's code.
"""

import configparser
import hashlib
import json
import os
import shutil
import subprocess
import sys

REQUIREMENTS = [
    'keystone==30.0.0',
    'glance==33.0.0',
    'nova==34.0.0',
    'openstack-placement==16.0.0',
    'python-openstackclient==10.5.0',
    'python-cyborgclient==3.0.0',
    'tempest==47.0.0',
    # The upstream API suite of the Cyborg v2 API (tox -e cyborg-tempest).
    'cyborg-tempest-plugin==2.8.0',
    'gunicorn==27.0.1',
    # SQLAlchemy 2.1 turns deprecation warnings Nova triggers into errors.
    'SQLAlchemy>=2.0,<2.1',
    'psycopg2-binary',
    # nova-compute with accel.LibvirtDriver on the nested compute node
    # (built against the system's libvirt: bindep.txt, profile aio).
    'libvirt-python',
]


def bundle_requirements(repo=None):
    """The bundle's ``install_requires`` lines, as ``setup.cfg`` of
    ``repo`` (default this checkout) lists them."""
    repo = repo or os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    parser = configparser.ConfigParser()
    parser.read(os.path.join(repo, 'setup.cfg'))
    lines = parser.get('options', 'install_requires', fallback='')
    return [line.strip() for line in lines.splitlines()
            if line.strip() and not line.strip().startswith('#')]


def stamp(repo=None):
    """What the venv was built from, hashed: rebuilt when it changes."""
    data = json.dumps({'requirements': REQUIREMENTS,
                       'bundle': bundle_requirements(repo),
                       'python': list(sys.version_info[:2])})
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def python(venv):
    return os.path.join(venv, 'bin', 'python')


def program(venv, name):
    return os.path.join(venv, 'bin', name)


def installer(venv):
    """The command (argv list) that installs packages into ``venv`` when
    it is built: ``uv pip install``, compiled to bytecode as pip does
    (L1 runs with ``PYTHONDONTWRITEBYTECODE``: it would compile Nova
    under TCG on each start), when ``uv`` is on ``PATH`` (``tox -e aio``
    and ``tox -e cyborg-tempest`` install it: 37 s against pip's 95 on 2
    cores, both with warm caches); else the venv's own pip.  uv reads
    PyPI, or ``UV_DEFAULT_INDEX``, not pip's configuration."""
    uv = shutil.which('uv')
    if uv:
        return [uv, 'pip', 'install', '--quiet', '--compile-bytecode',
                '--python', python(venv)]
    return _pip(venv)


def _pip(venv):
    """``pip install`` of ``venv`` itself (argv list)."""
    return [python(venv), '-m', 'pip', 'install', '--quiet',
            '--disable-pip-version-check']


def ensure(venv, repo, say, log_path):
    """Create or update ``venv``; install this bundle from ``repo``.

    :param say: progress printer (callable taking a str).
    """
    stamp_path = os.path.join(venv, '.aio-stamp')
    current = None
    if os.path.exists(stamp_path):
        with open(stamp_path) as f:
            current = f.read().strip()
    if current != stamp(repo):
        if os.path.exists(venv):
            say('venv: requirements changed, rebuilding %s' % venv)
            shutil.rmtree(venv)
        else:
            say('venv: creating %s (first time: about 1 to 3 minutes)' %
                venv)
        _run([sys.executable, '-m', 'venv', venv], log_path)
        _run(installer(venv) + REQUIREMENTS + [repo], log_path)
        _run([python(venv), '-m', 'pip', 'check'], log_path)
        with open(stamp_path, 'w') as f:
            f.write(stamp(repo) + '\n')
    else:
        say('venv: %s is up to date; reinstalling this bundle' % venv)
        # pip, also with uv at hand: the working tree's code each time,
        # never a build cached from an earlier one.
        _run(_pip(venv) + ['--no-deps', '--force-reinstall', repo],
             log_path)
    # compute_driver = accel.FakeDriver: the shim goes into the venv's Nova.
    _run([program(venv, 'nova-accel-driver-shim'), 'install'], log_path)


def _run(argv, log_path):
    with open(log_path, 'a') as log:
        log.write('$ %s\n' % ' '.join(argv))
        log.flush()
        proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RuntimeError('%s failed (%d); see %s' % (
            ' '.join(argv[:4]), proc.returncode, log_path))
