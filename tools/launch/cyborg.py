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

"""Upstream openstack-cyborg 17.0.0, started much as its devstack plugin
does (openstack/cyborg ``devstack/lib/cyborg``, 17.0.0): a venv of its
own, SQLite, the API under gunicorn without keystone (identity from the
``X-*`` headers), the conductor, and the agent with the fake driver,
reporting to a given Placement and sending events to a given Nova.

Used by the benchmarks (``benchmarks.upstream``), ``tools.compare_cyborg``
and the import tests (``tests/cyborg_import``).  Standard library only;
the process lifecycle stays with the caller.

    python -m tools.launch.cyborg      # build the venv when missing
"""

import os
import sqlite3
import subprocess
import sys

from tools.launch import ComponentMissing

CACHE = os.path.expanduser('~/.cache/nova-accel-bench')
VENV = os.path.join(CACHE, 'cyborg-venv')
REQUIREMENT = 'openstack-cyborg==17.0.0'
#: The ``[DEFAULT] host`` of the agent (its devices' ``hostname``).
HOST = 'cyborg-node'
#: What the fake driver of Cyborg 17 reports (openstack/cyborg
#: ``cyborg/accelerator/drivers/fake.py``, 17.0.0): one device at this
#: PCI address, one deployable of 16 FPGA units.
FAKE_ADDRESS = '0000:0c:00.0'
SERVICES = ('cyborg-conductor', 'cyborg-agent')


def program(name, venv=VENV):
    """Path of a console script of the Cyborg venv.

    :raises ComponentMissing: not there (``python -m tools.launch.cyborg``
        builds the venv).
    """
    path = os.path.join(venv, 'bin', name)
    if not os.path.exists(path):
        raise ComponentMissing(
            '%s not found: build the Cyborg 17 venv with `python -m '
            'tools.launch.cyborg` (pip install %s into %s)' % (
                name, REQUIREMENT, venv))
    return path


def ensure_venv(python=sys.executable, venv=VENV, log=None):
    """Create the Cyborg venv unless a usable one is there.

    Besides Cyborg 17 it holds gunicorn (the API's server) and PyMySQL
    (``cyborg-dbsync`` on a ``mysql+pymysql://`` database, as devstack
    gives Cyborg a MySQL one); a venv built before PyMySQL was added gets
    it without a rebuild.

    :param python: interpreter that creates the venv.
    :param log: open binary file for pip's output (None: inherit).
    :returns: the venv's python (str).
    :raises subprocess.CalledProcessError: venv or pip failed.
    """
    py = os.path.join(venv, 'bin', 'python')
    out = dict(stdout=log, stderr=subprocess.STDOUT if log else None)
    if all(os.path.exists(os.path.join(venv, 'bin', p))
           for p in ('cyborg-dbsync', 'gunicorn')):
        if subprocess.run([py, '-c', 'import pymysql'],
                          capture_output=True).returncode != 0:
            subprocess.run([py, '-m', 'pip', 'install', '-q', 'PyMySQL'],
                           check=True, timeout=300, **out)
        return py
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    subprocess.run([python, '-m', 'venv', '--clear', venv], check=True,
                   timeout=300, **out)
    subprocess.run([py, '-m', 'pip', 'install', '-q', REQUIREMENT,
                    'gunicorn', 'PyMySQL'], check=True, timeout=1200, **out)
    return py


def write_config(workdir, port, db_path, transport_url, placement_url,
                 nova_url, host=HOST, venv=VENV, periodic_interval=10):
    """Write ``cyborg.conf``, ``api-paste.ini`` (no keystone) and the WSGI
    script under ``workdir``.

    :param port: the API's port on 127.0.0.1.
    :param db_path: path of the SQLite database file.
    :param transport_url: oslo.messaging URL (a RabbitMQ broker).
    :param placement_url, nova_url: endpoints (``admin_token`` auth,
        token ``admin``).
    :returns: path of ``cyborg.conf``.
    """
    os.makedirs(os.path.join(workdir, 'locks'), exist_ok=True)
    conf = os.path.join(workdir, 'cyborg.conf')
    paste = os.path.join(workdir, 'api-paste.ini')
    with open(os.path.join(venv, 'etc', 'cyborg', 'api-paste.ini')) as f:
        text = f.read()
    with open(paste, 'w') as f:
        f.write(text.replace('request_id authtoken api_v2',
                             'request_id api_v2'))
    with open(conf, 'w') as f:
        f.write('\n'.join([
            '[DEFAULT]', 'host = %s' % host,
            'transport_url = %s' % transport_url,
            'periodic_interval = %d' % periodic_interval, 'debug = False',
            '[api]', 'host_ip = 127.0.0.1', 'port = %d' % port,
            'api_workers = 1', 'api_paste_config = %s' % paste,
            '[database]', 'connection = sqlite:///%s' % db_path,
            '[agent]', 'enabled_drivers = fake_driver',
            '[oslo_policy]', 'enforce_scope = False',
            'enforce_new_defaults = False',
            '[oslo_concurrency]', 'lock_path = %s'
            % os.path.join(workdir, 'locks'),
            '[keystone_authtoken]', 'service_token_roles = service',
            '[placement]', 'auth_type = admin_token',
            'endpoint = %s' % placement_url, 'token = admin',
            '[nova]', 'auth_type = admin_token',
            'endpoint = %s' % nova_url, 'token = admin', '']))
    with open(os.path.join(workdir, 'bench_cyborg_wsgi.py'), 'w') as f:
        f.write('import sys\n'
                'sys.argv = ["cyborg-api", "--config-file", %r]\n'
                'from cyborg.api import wsgi_app\n'
                'application = wsgi_app.init_application()\n' % conf)
    return conf


def create_schema(conf, db_path, venv=VENV):
    """``cyborg-dbsync create_schema``, then the unique index on
    ``device_profiles.uuid`` that Cyborg's migrations add on MySQL only.

    :raises ComponentMissing: no venv.
    :raises subprocess.CalledProcessError: ``cyborg-dbsync`` failed (its
        output in the exception).
    """
    _dbsync(conf, 'create_schema', venv)
    db = sqlite3.connect(db_path)
    try:
        db.execute('CREATE UNIQUE INDEX IF NOT EXISTS uniq_dp_uuid ON '
                   'device_profiles (uuid)')
        db.commit()
    finally:
        db.close()


def upgrade_schema(conf, venv=VENV):
    """``cyborg-dbsync upgrade``: Cyborg's alembic migrations, as
    devstack runs them on its MySQL database (openstack/cyborg
    ``devstack/lib/cyborg``, 17.0.0); for MySQL/MariaDB (they need
    PyMySQL in the venv), not SQLite (``create_schema``).

    :param conf: a ``cyborg.conf`` whose ``[database] connection`` is
        the (empty) database.
    :raises ComponentMissing: no venv.
    :raises subprocess.CalledProcessError: ``cyborg-dbsync`` failed (its
        output in the exception).
    """
    _dbsync(conf, 'upgrade', venv)


def _dbsync(conf, command, venv):
    subprocess.run([program('cyborg-dbsync', venv), '--config-file', conf,
                    command], check=True, capture_output=True,
                   cwd=os.path.dirname(conf), timeout=300)


def api_argv(workdir, port, venv=VENV):
    """cyborg-api under gunicorn, one worker, on ``127.0.0.1:port``."""
    return [program('gunicorn', venv), '--chdir', workdir, '-b',
            '127.0.0.1:%d' % port, '-w', '1',
            'bench_cyborg_wsgi:application']


def service_argv(name, conf, venv=VENV):
    """``cyborg-conductor`` or ``cyborg-agent`` with ``conf``."""
    return [program(name, venv), '--config-file', conf]


if __name__ == '__main__':
    print(ensure_venv())
