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

"""``python -m tools.aio up|demo|tempest|status|down`` (see README.md)."""

import argparse
import sys

from tools.aio import cloud

COMPUTE_HELP = ('nested: nova-compute with accel.LibvirtDriver, libvirtd and '
                'accel-backend-agent in a nested VM (QEMU/TCG, virtual '
                'IOMMU, emulated PCI accelerators) booting a real guest; '
                'fake: nova-compute with accel.FakeDriver on this machine')


def main(argv=None):
    """Run the command of ``argv`` (``sys.argv[1:]`` when None).

    :returns: the exit status (int): 0 on success, 2 for an unknown
        command.
    """
    return _run(parser().parse_args(argv))


def parser():
    """The ``argparse`` parser of ``python -m tools.aio`` (also what
    ``tests/nested`` reads the README demo's cloud from)."""
    parser = argparse.ArgumentParser(
        prog='python -m tools.aio',
        description='nova-accel all-in-one cloud on 127.0.0.1')
    sub = parser.add_subparsers(dest='command', required=True)
    p_up = sub.add_parser('up', help='create the venv (cached) and start '
                          'every service')
    p_up.add_argument('--db', choices=['postgresql', 'sqlite'],
                      default='postgresql')
    p_up.add_argument('--discovery', default='generic_pci,fake',
                      help='accel_backend discovery drivers, comma '
                      'separated (generic_pci: two recorded T4 GPUs; '
                      'fake: 16 fake FPGAs)')
    p_up.add_argument('--arq-binding-timeout', type=int, default=120)
    p_up.add_argument('--compute', choices=['fake', 'nested'],
                      default='fake', help=COMPUTE_HELP)
    p_up.add_argument('--keep', action='store_true',
                      help='on failure, leave everything for inspection')
    sub.add_parser('demo', help='boot a server with an accelerator with the '
                   'openstack CLI, show it, delete it')
    p_tempest = sub.add_parser('tempest', help='tempest run --regex '
                               'nova_accel against the cloud')
    p_tempest.add_argument('regex', nargs='?', default='nova_accel')
    p_tempest.add_argument('--concurrency', type=int, default=2)
    p_conf = sub.add_parser(
        'conformance', help='cyborg-tempest-plugin 2.8.0 API tests in both '
        'policy modes against the cloud (tox -e cyborg-tempest)')
    p_conf.add_argument('--concurrency', type=int, default=2)
    p_conf.add_argument('--up', action='store_true',
                        help='bring the cloud up first and down after')
    sub.add_parser('status', help='processes and endpoints of the cloud')
    sub.add_parser('down', help='stop everything and remove the run dir')
    p_all = sub.add_parser('all', help='up, demo, tempest, down')
    p_all.add_argument('--db', choices=['postgresql', 'sqlite'],
                       default='postgresql')
    p_all.add_argument('--skip-tempest', action='store_true',
                       help='only up, demo, down (the README main job)')
    p_all.add_argument('--compute', choices=['fake', 'nested'],
                       default='nested', help=COMPUTE_HELP)
    p_all.add_argument('--fake-compute', dest='compute',
                       action='store_const', const='fake',
                       help='same as --compute fake: the quick look '
                       '(about 3 minutes less, no real guest)')
    return parser


def _run(args):
    """Run the parsed command ``args``; its exit status (int)."""
    if args.command == 'up':
        cloud.up(db=args.db, discovery=args.discovery.split(','),
                 keep=args.keep,
                 arq_binding_timeout=args.arq_binding_timeout,
                 compute=args.compute)
        return 0
    if args.command == 'down':
        cloud.down()
        return 0
    if args.command == 'status':
        return cloud.status()
    if args.command == 'demo':
        from tools.aio import demo
        return demo.run()
    if args.command == 'tempest':
        from tools.aio import tempest
        return tempest.run(args.regex, args.concurrency)
    if args.command == 'conformance':
        from tools.aio import conformance
        if not args.up:
            return conformance.run(args.concurrency)
        cloud.up(db='postgresql')
        rc = 1
        try:
            rc = conformance.run(args.concurrency)
        finally:
            cloud.down(failed=rc != 0)
        return rc
    if args.command == 'all':
        from tools.aio import demo
        from tools.aio import tempest
        cloud.up(db=args.db, compute=args.compute)
        rc = 1
        try:
            rc = demo.run()
            if not args.skip_tempest:
                rc = tempest.run('nova_accel', 2) or rc
        finally:
            cloud.down(failed=rc != 0)
        return rc
    return 2


if __name__ == '__main__':
    sys.exit(main())
