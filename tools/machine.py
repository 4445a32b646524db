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

"""What machine and which versions a measurement or a comparison ran on:
the header of the benchmark reports (``benchmarks.run``) and of
``doc/cyborg-deviations.md`` (``tools.compare_cyborg``).

Standard library only; read from Linux's ``/proc/cpuinfo``,
``/proc/meminfo`` (``Documentation/filesystems/proc.rst``) and
``/etc/os-release`` (os-release(5)), each optional.
"""

from importlib import metadata
import os
import platform
import socket
import sqlite3
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The distributions whose versions the reports name.
DISTRIBUTIONS = ('nova', 'openstack-placement', 'nova-accel', 'SQLAlchemy',
                 'cheroot', 'gunicorn')


def machine_info():
    """This machine: ``{'hostname', 'cpu' (model name), 'cores' (int),
    'memory' ('<n> GiB'), 'kernel', 'os'}``; a value it cannot read is
    ``''`` (``cpu``, ``memory``) or Python's guess (``os``)."""
    cpu = platform.processor() or ''
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    cpu = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ''
    try:
        with open('/proc/meminfo') as f:
            kb = int(f.readline().split()[1])
            mem = '%.1f GiB' % (kb / 1024 / 1024)
    except (OSError, ValueError, IndexError):
        pass
    return {'hostname': socket.gethostname(), 'cpu': cpu,
            'cores': os.cpu_count(), 'memory': mem,
            'kernel': platform.release(),
            'os': _os_release()}


def _os_release():
    try:
        with open('/etc/os-release') as f:
            for line in f:
                if line.startswith('PRETTY_NAME='):
                    return line.split('=', 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.platform()


def versions():
    """``{component: version}`` (str): Python, the SQLite library, each of
    ``DISTRIBUTIONS`` (``'not installed'`` when missing) and ``git``, this
    checkout's commit, marked when ``accel_backend`` or ``nova_accel``
    have uncommitted changes (absent without git)."""
    out = {'python': platform.python_version(),
           'sqlite': sqlite3.sqlite_version}
    for dist in DISTRIBUTIONS:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = 'not installed'
    try:
        out['git'] = subprocess.check_output(
            ['git', 'rev-parse', '--short', 'HEAD'], cwd=REPO,
            text=True).strip()
        dirty = subprocess.call(['git', 'diff', '--quiet', 'HEAD', '--',
                                 'accel_backend', 'nova_accel'], cwd=REPO)
        if dirty:
            out['git'] += ' (+ uncommitted changes in accel_backend/'
            out['git'] += 'nova_accel)'
    except (OSError, subprocess.CalledProcessError):
        pass
    return out
