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

"""``nova-accel``: hot-add / hot-remove accelerators to a running server.

::

    nova-accel --config-file /etc/nova/nova.conf \\
        attach-accelerator --server <uuid> --device-profile <name> \\
        [--timeout <seconds>]
    nova-accel --config-file /etc/nova/nova.conf \\
        detach-accelerator --server <uuid> --device-profile <name>
    nova-accel --config-file /etc/nova/nova.conf \\
        replace-accelerator --server <uuid> --arq <uuid>

It runs where ``nova-manage`` runs, with the same ``nova.conf``: it finds
the server's compute host in Nova's databases (``[api_database]``, then the
server's cell, as nova-manage does; no Keystone needed), then calls the
compute driver over Nova's message bus (``transport_url``), on topic
``[nova_accel] hotplug_topic``, and waits for the answer (default timeout:
``arq_binding_timeout`` + ``rpc_response_timeout``).  The compute talks to
Placement and the accelerator service with its own credentials
(``[placement]``, ``[service_user]``).

Exit status: 0 done (the summary is printed as JSON), 1 refused or failed
(nothing changed; the reason is printed), 2 bad usage, or Nova cannot be
imported by this Python (one line on stderr: the command runs with the
Python of the Nova services; ``pip install nova-accel`` on a host without
Nova installs it too, and there it says so instead of a traceback).
"""

import sys

from oslo_config import cfg
from oslo_log import log as logging
from oslo_serialization import jsonutils

# ``pip install nova-accel`` installs the console script on hosts without
# Nova too, and the command runs with the Python of the Nova services
# (Nova is not a requirement of the distribution; Nova 34's
# nova/cmd/manage.py reads the same nova.conf and databases).  So Nova,
# and the modules of ours that import it, are imported here or not at
# all: ``main`` reports a failed import in one line, not a traceback.
try:
    import nova.conf
    from nova import config as nova_config
    from nova import context as nova_context
    from nova import objects as nova_objects
    from nova import rpc as nova_rpc

    from nova_accel.hotplug import exception
    from nova_accel.hotplug import rpc as hotplug_rpc
except ImportError as exc:
    NOVA_IMPORT_ERROR = exc
else:
    NOVA_IMPORT_ERROR = None

LOG = logging.getLogger(__name__)

COMMANDS = {
    'attach-accelerator': 'attach',
    'detach-accelerator': 'detach',
    'replace-accelerator': 'replace',
}


def _add_parsers(subparsers):
    for name, help_text in (
            ('attach-accelerator',
             'Hot-add the accelerators of a device profile to a running '
             'server.'),
            ('detach-accelerator',
             'Hot-remove the accelerators one attach-accelerator of that '
             'device profile added.')):
        parser = subparsers.add_parser(name, help=help_text)
        parser.add_argument('--server', required=True,
                            help='UUID of the server (ACTIVE).')
        parser.add_argument('--device-profile', required=True,
                            help='Name of the device profile.')
        _add_timeout(parser)
    parser = subparsers.add_parser(
        'replace-accelerator', help='Give a running server another device '
        'for one of its Bound ARQs, on its host (the device failed or is '
        'tainted NoExecute): hot-unplug, move the allocation, rebind, '
        'hot-plug.')
    parser.add_argument('--server', required=True,
                        help='UUID of the server (ACTIVE).')
    parser.add_argument('--arq', required=True,
                        help='UUID of the server\'s Bound ARQ whose device '
                             'is replaced.')
    _add_timeout(parser)


def _add_timeout(parser):
    parser.add_argument('--timeout', type=int, default=None,
                        help='Seconds to wait for the compute host '
                             '(default: arq_binding_timeout + '
                             'rpc_response_timeout).')


command_opt = cfg.SubCommandOpt('command', title='Commands',
                                handler=_add_parsers)

NOVA_MISSING = ('nova-accel: this Python cannot import Nova (%s); run it '
                'with the Python of the Nova services, where nova-manage '
                'runs\n')


def _require_nova():
    """:raises ImportError: this Python could not import Nova (or a
        module Nova imports) when this module was imported."""
    if NOVA_IMPORT_ERROR is not None:
        raise NOVA_IMPORT_ERROR


def run(command, server, device_profile, timeout=None, context=None,
        out=sys.stdout, err=sys.stderr):
    """Run one command (what ``main`` does once the options are parsed).

    :param command: ``attach-accelerator``, ``detach-accelerator`` or
        ``replace-accelerator``.
    :param device_profile: the device profile name, or for
        ``replace-accelerator`` the ARQ's UUID.
    :returns: the exit status.
    :raises ImportError: Nova cannot be imported (``main`` checks first).
    """
    _require_nova()
    ctxt = context or nova_context.get_admin_context()
    api = hotplug_rpc.HotplugAPI()
    method = getattr(api, COMMANDS[command])
    try:
        result = method(ctxt, server, device_profile, timeout=timeout)
    except exception.HotplugError as exc:
        err.write('%s failed: %s\n' % (command, exc))
        return 1
    except Exception as exc:
        LOG.debug('%s failed', command, exc_info=True)
        err.write('%s failed: %s: %s\n' % (command, type(exc).__name__, exc))
        return 1
    out.write(jsonutils.dumps(result, indent=2, sort_keys=True) + '\n')
    return 0


def main(argv=None):
    """``nova-accel attach-accelerator|detach-accelerator <server>
    <device profile>`` or ``replace-accelerator <server> <arq>``: console
    script; reads Nova's configuration
    (``--config-file``), asks the server's compute node over RPC and
    prints the JSON result.

    :param argv: the command line, program name first (list of str);
        ``sys.argv`` when None.
    :returns: the exit status (int): 0, 1 with one line on stderr, or 2
        with one line on stderr when this Python cannot import Nova
        (before the command line is parsed: ``--help`` included, since
        the options are Nova's).
    """
    argv = sys.argv if argv is None else argv
    if NOVA_IMPORT_ERROR is not None:
        sys.stderr.write(NOVA_MISSING % ' '.join(
            str(NOVA_IMPORT_ERROR).split()))
        return 2
    conf = nova.conf.CONF
    conf.register_cli_opt(command_opt)
    nova_config.parse_args(argv, prog='nova-accel')
    logging.setup(conf, 'nova')
    nova_objects.register_all()
    what = (conf.command.arq if conf.command.name == 'replace-accelerator'
            else conf.command.device_profile)
    try:
        return run(conf.command.name, conf.command.server, what,
                   timeout=conf.command.timeout)
    finally:
        nova_rpc.cleanup()


if __name__ == '__main__':
    sys.exit(main())
