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

"""The all-in-one cloud's infrastructure: PostgreSQL and RabbitMQ.

How each is launched is ``tools.launch.postgresql`` and
``tools.launch.rabbitmq`` (the tests' fixtures use them too); here they
are started as processes of the cloud, recorded in its ``state.json``
(``tools.aio.procs``), and RabbitMQ is stopped the way it wants to be.
"""

import grp
import os
import pwd
import shutil
import socket
import subprocess

from tools.aio import config
from tools.aio import procs
from tools.launch import ComponentMissing
from tools.launch import postgresql as launch_pg
from tools.launch import rabbitmq as launch_rabbit


def start_postgres(cloud, say):
    """Start PostgreSQL (``initdb`` in the run directory, as its system
    user when we are root) and create the cloud's databases
    (``config.DATABASES``); ``say(msg)`` reports progress.

    :raises procs.ProcessFailed: when it fails or is not ready in 60 s.
    """
    layout = cloud.layout
    # How to launch it: tools/launch/postgresql.py (the tests' fixture
    # uses it too); the lifecycle is ours (procs).
    user = launch_pg.system_user()
    bindir = launch_pg.bindir()
    datadir = layout.path('pg', 'data')
    os.makedirs(datadir)
    if user:
        os.chown(layout.path('pg'), pwd.getpwnam(user).pw_uid,
                 grp.getgrnam(user).gr_gid)
        os.chown(datadir, pwd.getpwnam(user).pw_uid,
                 grp.getgrnam(user).gr_gid)
    say('postgresql: initdb')
    cloud.run('postgresql', launch_pg.initdb_argv(bindir, datadir),
              user=user, cwd=layout.path('pg'))
    rec = cloud.record(procs.spawn('postgresql', launch_pg.server_argv(
        bindir, datadir, layout.ports['postgres'], layout.path('pg'),
        max_connections=300), layout.path('logs'), user=user,
        cwd=layout.path('pg')))
    psql = [_find([bindir], 'psql'), '-h', '127.0.0.1', '-p',
            str(layout.ports['postgres']), '-U', 'postgres', '-v',
            'ON_ERROR_STOP=1', '-q']
    cloud.wait_for('postgresql', lambda: _pg_ready(psql), rec, timeout=60)
    sql = ''.join('CREATE DATABASE %s;' % name for name in config.DATABASES)
    for statement in sql.split(';')[:-1]:
        cloud.run('postgresql', psql + ['-c', statement])
    say('postgresql: up on port %d, databases %s' % (
        layout.ports['postgres'], ', '.join(config.DATABASES)))


def _pg_ready(psql):
    return subprocess.run(psql + ['-c', 'SELECT 1'], capture_output=True,
                          stdin=subprocess.DEVNULL).returncode == 0


def start_rabbitmq(cloud, say):
    """Start epmd and a RabbitMQ node of the cloud's own (its environment
    is kept in ``state.json`` for :func:`stop_rabbitmq`); ``say(msg)``
    reports progress.

    :raises procs.ProcessFailed: when it fails or is not ready in 90 s.
    """
    layout = cloud.layout
    # How to launch it: tools/launch/rabbitmq.py (the tests' fixture uses
    # it too); the lifecycle is ours (procs).
    env, conf = config.rabbitmq(layout)
    base = layout.path('rabbitmq')
    launch_rabbit.write_files(env, conf)
    full_env = cloud.env(**env)
    say('rabbitmq: starting epmd and rabbitmq-server (node %s)' %
        env['RABBITMQ_NODENAME'])
    # Our own epmd, so that nothing outlives `down`.
    cloud.record(procs.spawn(
        'epmd', launch_rabbit.epmd_argv(layout.ports['epmd']),
        layout.path('logs'), env=full_env))
    rec = cloud.record(procs.spawn(
        'rabbitmq', [launch_rabbit.program('rabbitmq-server')],
        layout.path('logs'), env=full_env, cwd=base))
    cloud.state['rabbitmq_env'] = env
    cloud.save()
    ctl = [launch_rabbit.program('rabbitmqctl'), '-n',
           env['RABBITMQ_NODENAME']]

    def ready():
        done = subprocess.run(ctl + ['await_startup', '--timeout', '5'],
                              env=full_env, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=30)
        return done.returncode == 0 and _port_open(layout.ports['rabbit'])
    cloud.wait_for('rabbitmq', ready, rec, timeout=90, interval=1)
    say('rabbitmq: up on port %d' % layout.ports['rabbit'])


def _port_open(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(('127.0.0.1', port)) == 0


def _find(pattern_dirs, name):
    for d in pattern_dirs:
        path = os.path.join(d, name)
        if os.path.exists(path):
            return path
    found = shutil.which(name)
    if not found:
        raise RuntimeError('%s not found (see tools/aio/README.md: '
                           'bindep -b aio)' % name)
    return found


def stop_rabbitmq(cloud):
    """``rabbitmqctl stop`` the cloud's RabbitMQ node (up to 60 s), so that
    it shuts down cleanly; a missing or failing rabbitmqctl is ignored
    (the process group is stopped anyway)."""
    renv = cloud.state.get('rabbitmq_env')
    if not renv:
        return
    try:
        procs.run([launch_rabbit.program('rabbitmqctl'), '-n',
                   renv['RABBITMQ_NODENAME'], 'stop'], os.devnull,
                  env=cloud.env(**renv), timeout=60, check=False)
    except (procs.ProcessFailed, ComponentMissing):
        pass
