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

"""``openstack accelerator device taint|untaint|taint list``: device
taints of accel_backend (API microversion 2.5,
``/v2/deployables/{uuid}/taints``).

The commands run on the accelerator client the ``openstack`` program
already has (``client_manager.accelerator``: openstacksdk's accelerator
proxy, a keystoneauth1 ``Adapter`` on the catalog's ``accelerator``
endpoint, from python-openstackclient 10's ``openstackclient.accelerator``
or python-cyborgclient's plugin), sending ``OpenStack-API-Version:
accelerator 2.5``.  An error of the API is one line: its ``detail`` and
stable ``code`` (``accel_backend.exception.codes``).
"""

from osc_lib.command import command
from osc_lib import exceptions

from accel_common import placement_errors
from accel_common import taints

COLUMNS = ('uuid', 'key', 'value', 'effect', 'function', 'reason',
           'set_by', 'time_added')


def _call(app, method, path, body=None):
    """``method`` ``/v2<path>`` of the accelerator API at 2.5.

    :returns: the decoded JSON body, or None (no body).
    :raises osc_lib.exceptions.CommandError: the API answered 4xx/5xx.
    """
    client = app.client_manager.accelerator
    kwargs = {'json': body} if body is not None else {}
    resp = client.request(path, method, microversion=taints.MICROVERSION,
                          raise_exc=False, **kwargs)
    if resp.status_code >= 400:
        try:
            error = placement_errors.first_error(resp.json())
        except ValueError:
            error = None
        text = ('%s (%s)' % (error.get('detail'), error.get('code'))
                if error else resp.text.strip() or resp.reason)
        raise exceptions.CommandError('%s %s: HTTP %s: %s' % (
            method, path, resp.status_code, text))
    return resp.json() if resp.content else None


def _taints_path(deployable):
    return '/deployables/%s/taints' % deployable


def _row(taint):
    return tuple(taint.get(c) for c in COLUMNS)


class TaintDevice(command.ShowOne):
    """Taint a deployable, or one function of a pooled deployable.

    NoSchedule: no new accelerator request is bound to it and Placement
    reserves it (bound ones stay).  NoExecute: the same for now.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('deployable', metavar='<deployable>',
                            help='UUID of the deployable')
        parser.add_argument('--key', required=True, metavar='<key>',
                            help='taint key (a key set again is replaced)')
        parser.add_argument('--effect', required=True,
                            choices=taints.EFFECTS,
                            help='NoSchedule or NoExecute')
        parser.add_argument('--value', metavar='<value>', help='taint value')
        parser.add_argument('--reason', metavar='<reason>', help='why')
        parser.add_argument('--function', metavar='<pci-address>',
                            help='one function of a pooled deployable '
                                 '(its PCI address)')
        return parser

    def take_action(self, parsed_args):
        body = {'key': parsed_args.key, 'effect': parsed_args.effect}
        for name in ('value', 'reason', 'function'):
            if getattr(parsed_args, name) is not None:
                body[name] = getattr(parsed_args, name)
        taint = _call(self.app, 'POST', _taints_path(parsed_args.deployable),
                      body)
        return COLUMNS, _row(taint)


class ListDeviceTaints(command.Lister):
    """List the taints of a deployable."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('deployable', metavar='<deployable>',
                            help='UUID of the deployable')
        return parser

    def take_action(self, parsed_args):
        found = _call(self.app, 'GET', _taints_path(parsed_args.deployable))
        return COLUMNS, [_row(t) for t in found['taints']]


class UntaintDevice(command.Command):
    """Remove a taint of a deployable (by key)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('deployable', metavar='<deployable>',
                            help='UUID of the deployable')
        parser.add_argument('--key', required=True, metavar='<key>',
                            help='key of the taint to remove')
        parser.add_argument('--function', metavar='<pci-address>',
                            help='the function the taint is on (default: '
                                 'the taint of the whole deployable)')
        return parser

    def take_action(self, parsed_args):
        path = _taints_path(parsed_args.deployable)
        gone = [t for t in _call(self.app, 'GET', path)['taints']
                if t['key'] == parsed_args.key and
                t['function'] == parsed_args.function]
        if not gone:
            raise exceptions.CommandError(
                'Deployable %s has no taint %s%s' % (
                    parsed_args.deployable, parsed_args.key,
                    ' on function %s' % parsed_args.function
                    if parsed_args.function else ''))
        for taint in gone:
            _call(self.app, 'DELETE', '%s/%s' % (path, taint['uuid']))
