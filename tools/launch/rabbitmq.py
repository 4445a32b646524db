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

"""A private RabbitMQ broker (Debian ``rabbitmq-server``, bindep.txt).

The broker runs from the package's own ``rabbitmq-server`` script (not the
``/usr/sbin`` wrapper, which switches to the ``rabbitmq`` user) with
everything of its own under one directory: node name, ``HOME`` (Erlang
cookie), mnesia and log directories, an empty plugin list, and loopback
ports for AMQP, Erlang distribution and epmd.  Its epmd is started by the
caller (:func:`epmd_argv`) and the node is told not to start one, so
nothing outlives the caller's stop.  The ``guest`` user works over
loopback.
"""

import glob
import os
import shutil
import socket

from tools.launch import ComponentMissing


def _first(candidates, what):
    for path in candidates:
        if path and os.path.exists(path):
            return path
    raise ComponentMissing('%s not found; install the Debian package '
                           'rabbitmq-server (bindep.txt)' % what)


def program(name):
    """Path of ``rabbitmq-server`` or ``rabbitmqctl`` (the package's
    scripts that run as we are).

    :raises ComponentMissing: not installed.
    """
    return _first(sorted(glob.glob('/usr/lib/rabbitmq/lib/rabbitmq_server-*/'
                                   'sbin/' + name), reverse=True) +
                  ['/usr/lib/rabbitmq/bin/' + name], name)


def epmd_argv(port):
    """Erlang's port mapper in the foreground on ``127.0.0.1:port``.

    :raises ComponentMissing: not installed (erlang-base, pulled in by
        rabbitmq-server).
    """
    epmd = _first(sorted(glob.glob('/usr/lib/erlang/erts-*/bin/epmd'),
                         reverse=True) +
                  ['/usr/bin/epmd', '/usr/lib/erlang/bin/epmd',
                   shutil.which('epmd')], 'epmd')
    return [epmd, '-address', '127.0.0.1', '-port', str(port)]


def environment(base, node, port, dist_port, epmd_port):
    """Environment of a broker whose files are all under ``base``.

    :param node: node name without host (``<node>@localhost``).
    :param port: AMQP port; ``dist_port``: Erlang distribution;
        ``epmd_port``: the epmd of :func:`epmd_argv`.
    :returns: dict (add it to ``os.environ``).
    """
    return {
        'HOME': base,
        'RABBITMQ_NODENAME': '%s@localhost' % node,
        'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
        'RABBITMQ_NODE_PORT': str(port),
        'RABBITMQ_DIST_PORT': str(dist_port),
        'ERL_EPMD_PORT': str(epmd_port),
        'ERL_EPMD_ADDRESS': '127.0.0.1',
        'RABBITMQ_MNESIA_BASE': os.path.join(base, 'mnesia'),
        'RABBITMQ_LOG_BASE': os.path.join(base, 'log'),
        'RABBITMQ_ENABLED_PLUGINS_FILE': os.path.join(base,
                                                      'enabled_plugins'),
        'RABBITMQ_CONFIG_FILE': os.path.join(base, 'rabbitmq'),
        'RABBITMQ_CONF_ENV_FILE': os.path.join(base, 'rabbitmq-env.conf'),
        'RABBITMQ_PID_FILE': os.path.join(base, 'rabbitmq.pid'),
        'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS': '-start_epmd false',
    }


def config(port, log_to_console=False):
    """``rabbitmq.conf`` text: AMQP on ``127.0.0.1:port``, ``guest`` over
    loopback, logs to a file (warnings) or to the console (all)."""
    logs = ('log.console = true\nlog.file = false\n' if log_to_console
            else 'log.file.level = warning\n')
    return ('listeners.tcp.default = 127.0.0.1:%d\n'
            'loopback_users.guest = true\n' % port) + logs


def write_files(env, conf):
    """Write the files ``environment()`` names: ``rabbitmq.conf`` (text
    ``conf``), an empty plugin list and an empty env file."""
    os.makedirs(env['HOME'], exist_ok=True)
    with open(env['RABBITMQ_CONFIG_FILE'] + '.conf', 'w') as f:
        f.write(conf)
    with open(env['RABBITMQ_ENABLED_PLUGINS_FILE'], 'w') as f:
        f.write('[].\n')
    with open(env['RABBITMQ_CONF_ENV_FILE'], 'w') as f:
        f.write('')


def amqp_ready(port):
    """True when a broker answers the AMQP 0-9-1 protocol header on
    ``127.0.0.1:port``."""
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=2) as s:
            s.sendall(b'AMQP\x00\x00\x09\x01')
            return s.recv(8).startswith(b'\x01')  # connection.start frame
    except OSError:
        return False


def url(port):
    """oslo.messaging transport URL of the broker at ``port``."""
    return 'rabbit://guest:guest@127.0.0.1:%d/' % port
