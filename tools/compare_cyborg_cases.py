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

"""The requests ``tools.compare_cyborg`` sends to upstream Cyborg 17 and
to accel_backend: ``CASES``, in the order they are sent.

A case is ``(name, kind, method, path, body, extra)``:

- ``kind``: ``'bad'`` (invalid input: a 4xx is expected) or ``'ok'`` (a
  normal operation);
- ``path`` and ``body``: ``$var`` in their strings is substituted with the
  sending side's context (``$rc``, ``$trait``, ``$host``, ``$rp``, ``$dep``,
  ``$dev``: the service's own device; others saved by earlier cases);
  ``body`` is a JSON-able object, :class:`RAW` bytes sent as they are, or
  None (no body);
- ``extra``: ``'version'`` (an ``OpenStack-API-Version`` value), ``'save'``
  (``{var: callable(answer JSON)}``), ``'wait_state'`` (poll that ARQ until
  it is resolved), ``'expect_state'`` (record the state in the answer) and
  ``'fresh_arq'`` (create a new ARQ ``$arq_x`` and instance UUID ``$inst``
  first, and record that ARQ's state afterwards).

Nothing here sends a request: this module is data.
"""

from accel_common import arq_states

UNKNOWN = '9d3a2c1e-0000-4000-8000-000000000001'
INST1 = '11111111-1111-4111-8111-111111111111'
INST2 = '22222222-2222-4222-8222-222222222222'
IMAGE = '5f2e0a3c-1b2d-4c3e-8f4a-0123456789ab'


class RAW(bytes):
    """A request body sent verbatim (not JSON-encoded, no substitution)."""


def _first(j):
    """The first item of a JSON list answer, or the answer itself."""
    return j[0] if isinstance(j, list) else j


def _group(**extra):
    """A device profile group asking for one ``$rc`` with trait ``$trait``,
    updated with ``extra`` (``{key: value}``)."""
    g = {'resources:$rc': '1', 'trait:$trait': 'required'}
    g.update(extra)
    return g


def _bind(arq, rp='$rp', instance='$inst', host='$host'):
    """A bind PATCH body ``{arq: [3 add ops]}`` (JSON-patch, all strings)."""
    return {arq: [{'path': '/hostname', 'op': 'add', 'value': host},
                  {'path': '/device_rp_uuid', 'op': 'add', 'value': rp},
                  {'path': '/instance_uuid', 'op': 'add', 'value': instance}]}


def profile(name, *groups, **fields):
    """A device profile create body: a list of one profile ``{'name':
    name, 'groups': [groups] or [one _group()], **fields}``."""
    p = {'name': name, 'groups': list(groups) or [_group()]}
    p.update(fields)
    return [p]


DP = '/v2/device_profiles'
FRESH = {'fresh_arq': True}
ARQ = '/v2/accelerator_requests'

CASES = [
    # -- root and microversions
    ('GET / (versions)', 'ok', 'GET', '/', None, {}),
    ('GET /v2', 'ok', 'GET', '/v2', None, {}),
    ('microversion 2.9 (too new)', 'bad', 'GET', '/v2', None,
     {'version': 'accelerator 2.9'}),
    ('microversion 1.0 (too old)', 'bad', 'GET', '/v2', None,
     {'version': 'accelerator 1.0'}),
    ('malformed microversion 2.x', 'bad', 'GET', '/v2', None,
     {'version': 'accelerator 2.x'}),
    ('unknown path /v2/nonsense', 'bad', 'GET', '/v2/nonsense', None, {}),
    ('POST / (wrong method)', 'bad', 'POST', '/', {}, {}),

    # -- device profiles: normal operations
    ('create profile', 'ok', 'POST', DP, profile('cmp-gpu'),
     {'save': {'dp': lambda j: _first(j)['uuid']}}),
    ('list profiles by name', 'ok', 'GET', DP + '?name=cmp-gpu', None, {}),
    ('get profile by uuid', 'ok', 'GET', DP + '/$dp', None, {}),
    ('get profile by name at 2.2', 'ok', 'GET', DP + '/cmp-gpu', None,
     {'version': 'accelerator 2.2'}),

    # -- device profiles: bad input
    ('profile: duplicate name', 'bad', 'POST', DP, profile('cmp-gpu'), {}),
    ('profile: name with a space', 'bad', 'POST', DP,
     profile('gpu profile'), {}),
    ('profile: empty name', 'bad', 'POST', DP, profile(''), {}),
    ('profile: overlong name (256 chars)', 'bad', 'POST', DP,
     profile('a' * 256), {}),
    ('profile: name is a number', 'bad', 'POST', DP, profile(42), {}),
    ('profile: missing groups', 'bad', 'POST', DP, [{'name': 'nogroups'}],
     {}),
    ('profile: empty groups list', 'bad', 'POST', DP,
     [{'name': 'emptygroups', 'groups': []}], {}),
    ('profile: empty list body', 'bad', 'POST', DP, [], {}),
    ('profile: list of two profiles', 'bad', 'POST', DP,
     profile('two-a') + profile('two-b'), {}),
    ('profile: unknown field', 'bad', 'POST', DP,
     profile('extra', flavor='big'), {}),
    ('profile: group value not a string', 'bad', 'POST', DP,
     profile('intvalue', {'resources:$rc': 1}), {}),
    ('profile: unknown resource class FOO', 'bad', 'POST', DP,
     profile('foo', {'resources:FOO': '1'}), {}),
    ('profile: empty resource class', 'bad', 'POST', DP,
     profile('norc', {'resources:': '1'}), {}),
    ('profile: amount not a number', 'bad', 'POST', DP,
     profile('badamount', {'resources:$rc': 'one'}), {}),
    ('profile: amount zero', 'bad', 'POST', DP,
     profile('zero', {'resources:$rc': '0'}), {}),
    ('profile: negative amount', 'bad', 'POST', DP,
     profile('negative', {'resources:$rc': '-1'}), {}),
    ('profile: trait value "preferred"', 'bad', 'POST', DP,
     profile('badtrait', _group(**{'trait:$trait': 'preferred'})), {}),
    ('profile: bad trait syntax (lower case, dash)', 'bad', 'POST', DP,
     profile('badsyntax', {'resources:$rc': '1',
                           'trait:custom-bad-trait': 'required'}), {}),
    ('profile: unknown standard trait', 'bad', 'POST', DP,
     profile('unknowntrait', {'resources:$rc': '1',
                              'trait:NOT_A_TRAIT': 'required'}), {}),
    ('profile: key without prefix', 'bad', 'POST', DP,
     profile('noprefix', {'$rc': '1'}), {}),
    ('profile: group without resources', 'bad', 'POST', DP,
     profile('noresources', {'trait:$trait': 'required'}), {}),
    ('profile: empty group {}', 'bad', 'POST', DP,
     profile('emptygroup', {}), {}),
    ('profile: body not JSON', 'bad', 'POST', DP, RAW(b'{not json'), {}),
    ('profile: no body', 'bad', 'POST', DP, None, {}),
    ('profile: body is a JSON string', 'bad', 'POST', DP, RAW(b'"gpu"'), {}),
    ('profile: GET by name at 2.0', 'bad', 'GET', DP + '/cmp-gpu', None, {}),
    ('profile: GET by name at 2.1', 'bad', 'GET', DP + '/cmp-gpu', None,
     {'version': 'accelerator 2.1'}),
    ('profile: GET unknown name at 2.2', 'bad', 'GET', DP + '/nope', None,
     {'version': 'accelerator 2.2'}),
    ('profile: GET unknown uuid', 'bad', 'GET', DP + '/' + UNKNOWN, None, {}),
    ('profile: PUT on the collection', 'bad', 'PUT', DP, {}, {}),
    ('profile: bulk DELETE without value', 'bad', 'DELETE', DP, None, {}),
    ('profile: bulk DELETE of an unknown name', 'bad', 'DELETE',
     DP + '?value=nope', None, {}),
    ('profile: DELETE unknown uuid', 'bad', 'DELETE', DP + '/' + UNKNOWN,
     None, {}),

    # -- ARQs: normal operations
    ('create ARQ a', 'ok', 'POST', ARQ, {'device_profile_name': 'cmp-gpu'},
     {'save': {'arq_a': lambda j: j['arqs'][0]['uuid']}}),
    ('create ARQ b', 'ok', 'POST', ARQ, {'device_profile_name': 'cmp-gpu'},
     {'save': {'arq_b': lambda j: j['arqs'][0]['uuid']}}),
    ('list ARQs', 'ok', 'GET', ARQ, None, {}),
    ('show ARQ a', 'ok', 'GET', ARQ + '/$arq_a', None, {}),

    # -- ARQs: bad create / list / show
    ('ARQ: create from unknown profile', 'bad', 'POST', ARQ,
     {'device_profile_name': 'nope'}, {}),
    ('ARQ: create without profile name', 'bad', 'POST', ARQ, {}, {}),
    ('ARQ: create with unknown field', 'bad', 'POST', ARQ,
     {'device_profile_name': 'cmp-gpu', 'flavor': 'big'}, {}),
    ('ARQ: create with a list body', 'bad', 'POST', ARQ,
     [{'device_profile_name': 'cmp-gpu'}], {}),
    ('ARQ: create with non-JSON body', 'bad', 'POST', ARQ,
     RAW(b'device_profile_name=cmp-gpu'), {}),
    ('ARQ: show unknown uuid', 'bad', 'GET', ARQ + '/' + UNKNOWN, None, {}),
    ('ARQ: show bad uuid', 'bad', 'GET', ARQ + '/not-a-uuid', None, {}),
    ('ARQ: list by bad instance uuid', 'bad', 'GET',
     ARQ + '?instance=not-a-uuid', None, {}),
    ('ARQ: list with unknown bind_state', 'bad', 'GET',
     ARQ + '?instance=%s&bind_state=bogus' % INST1, None, {}),
    ('ARQ: list with bind_state, no instance', 'bad', 'GET',
     ARQ + '?bind_state=resolved', None, {}),
    ('ARQ: PUT on the collection', 'bad', 'PUT', ARQ, {}, {}),

    # -- ARQs: bad JSON-patch bodies.  Each gets a new ARQ ($arq_x, from
    # cmp-gpu) and a new instance ($inst), so that a patch one service
    # accepts cannot change what the next case sees; the ARQ's state
    # afterwards is recorded.
    ('patch: mixes add and remove', 'bad', 'PATCH', ARQ,
     {'$arq_x': [{'path': '/hostname', 'op': 'add', 'value': '$host'},
                 {'path': '/device_rp_uuid', 'op': 'remove'},
                 {'path': '/instance_uuid', 'op': 'add', 'value': '$inst'}]},
     FRESH),
    ('patch: missing device_rp_uuid/instance_uuid', 'bad', 'PATCH', ARQ,
     {'$arq_x': [{'path': '/hostname', 'op': 'add', 'value': '$host'}]},
     FRESH),
    ('patch: add without value', 'bad', 'PATCH', ARQ,
     {'$arq_x': [{'path': '/hostname', 'op': 'add'},
                 {'path': '/device_rp_uuid', 'op': 'add', 'value': '$rp'},
                 {'path': '/instance_uuid', 'op': 'add', 'value': '$inst'}]},
     FRESH),
    ('patch: non-string hostname (42)', 'bad', 'PATCH', ARQ,
     {'$arq_x': [{'path': '/hostname', 'op': 'add', 'value': 42},
                 {'path': '/device_rp_uuid', 'op': 'add', 'value': '$rp'},
                 {'path': '/instance_uuid', 'op': 'add', 'value': '$inst'}]},
     FRESH),
    ('patch: unknown path /state', 'bad', 'PATCH', ARQ,
     {'$arq_x': _bind('$arq_x')['$arq_x'] + [
         {'path': '/state', 'op': 'add', 'value': arq_states.BOUND}]},
     FRESH),
    ('patch: unknown op "replace"', 'bad', 'PATCH', ARQ,
     {'$arq_x': [{'path': '/hostname', 'op': 'replace', 'value': '$host'}]},
     FRESH),
    ('patch: keyed by a bad uuid', 'bad', 'PATCH', ARQ,
     _bind('not-a-uuid'), FRESH),
    ('patch: bad device_rp_uuid', 'bad', 'PATCH', ARQ,
     _bind('$arq_x', rp='gpu0'), FRESH),
    ('patch: bad instance_uuid', 'bad', 'PATCH', ARQ,
     _bind('$arq_x', instance='vm1'), FRESH),
    ('patch: project_id at 2.0', 'bad', 'PATCH', ARQ,
     {'$arq_x': _bind('$arq_x')['$arq_x'] + [
         {'path': '/project_id', 'op': 'add', 'value': 'p1'}]}, FRESH),
    ('patch: empty object', 'bad', 'PATCH', ARQ, {}, FRESH),
    ('patch: empty op list', 'bad', 'PATCH', ARQ, {'$arq_x': []}, FRESH),
    ('patch: body is a list', 'bad', 'PATCH', ARQ,
     [{'path': '/hostname', 'op': 'add', 'value': '$host'}], FRESH),
    ('patch: body not JSON', 'bad', 'PATCH', ARQ, RAW(b'[{'), FRESH),
    ('patch: unknown ARQ uuid', 'bad', 'PATCH', ARQ, _bind(UNKNOWN), FRESH),
    ('patch: bind to an unknown RP uuid', 'bad', 'PATCH', ARQ,
     _bind('$arq_x', rp=UNKNOWN), FRESH),
    ('ARQ b unchanged', 'ok', 'GET', ARQ + '/$arq_b', None,
     {'expect_state': arq_states.INITIAL}),

    # -- bind, and binding in a state that cannot be bound
    ('bind ARQ a', 'ok', 'PATCH', ARQ, _bind('$arq_a', instance=INST1),
     {'wait_state': '$arq_a'}),
    ('list ARQs of the instance', 'ok', 'GET', ARQ + '?instance=' + INST1,
     None, {}),
    ('list resolved ARQs of the instance', 'ok', 'GET',
     ARQ + '?instance=%s&bind_state=resolved' % INST1, None, {}),
    ('patch: bind a Bound ARQ elsewhere', 'bad', 'PATCH', ARQ,
     _bind('$arq_a', instance=INST2), {}),

    # -- delete ARQs
    ('ARQ: DELETE with neither instance nor arqs', 'bad', 'DELETE', ARQ,
     None, {}),
    ('ARQ: DELETE with both instance and arqs', 'bad', 'DELETE',
     ARQ + '?instance=%s&arqs=$arq_a' % INST1, None, {}),
    ('ARQ: DELETE with a bad instance uuid', 'bad', 'DELETE',
     ARQ + '?instance=vm1', None, {}),
    ('ARQ: DELETE with a bad arq uuid', 'bad', 'DELETE',
     ARQ + '?arqs=$arq_a,nope', None, {}),
    ('unbind ARQ b', 'ok', 'PATCH', ARQ,
     {'$arq_b': [{'path': p, 'op': 'remove'} for p in
                 ('/hostname', '/device_rp_uuid', '/instance_uuid')]}, {}),
    ('delete ARQs by instance', 'ok', 'DELETE', ARQ + '?instance=' + INST1,
     None, {}),
    ('delete ARQ b by arqs=', 'ok', 'DELETE', ARQ + '?arqs=$arq_b', None,
     {}),
    ('delete profile by uuid', 'ok', 'DELETE', DP + '/$dp', None, {}),

    # -- deleting a profile that an ARQ uses (last: on Cyborg it leaves an
    # ARQ without its profile behind)
    ('create profile cmp-inuse', 'ok', 'POST', DP, profile('cmp-inuse'),
     {'save': {'dp_inuse': lambda j: _first(j)['uuid']}}),
    ('create ARQ of cmp-inuse', 'ok', 'POST', ARQ,
     {'device_profile_name': 'cmp-inuse'},
     {'save': {'arq_inuse': lambda j: j['arqs'][0]['uuid']}}),
    ('profile: DELETE a profile in use', 'bad', 'DELETE', DP + '/$dp_inuse',
     None, {}),
    ('show the ARQ of that profile', 'ok', 'GET', ARQ + '/$arq_inuse', None,
     {}),
    ('list ARQs after that', 'ok', 'GET', ARQ, None, {}),

    # -- devices, deployables, attributes
    ('list devices', 'ok', 'GET', '/v2/devices', None, {}),
    ('show device', 'ok', 'GET', '/v2/devices/$dev', None, {}),
    ('device: show bad uuid', 'bad', 'GET', '/v2/devices/gpu0', None, {}),
    ('device: show unknown uuid', 'bad', 'GET', '/v2/devices/' + UNKNOWN,
     None, {}),
    ('device: POST on the collection', 'bad', 'POST', '/v2/devices', {},
     {}),
    ('device: enable a bad uuid', 'bad', 'POST', '/v2/devices/gpu0/enable',
     None, {'version': 'accelerator 2.3'}),
    ('device: disable an unknown uuid', 'bad', 'POST',
     '/v2/devices/%s/disable' % UNKNOWN, None,
     {'version': 'accelerator 2.3'}),
    ('list deployables', 'ok', 'GET', '/v2/deployables', None, {}),
    ('deployable: show bad uuid', 'bad', 'GET', '/v2/deployables/gpu0',
     None, {}),
    ('deployable: show unknown uuid', 'bad', 'GET',
     '/v2/deployables/' + UNKNOWN, None, {}),
    ('deployable: program with an empty patch', 'bad', 'PATCH',
     '/v2/deployables/$dep/program', [], {}),
    ('deployable: program an unknown uuid', 'bad', 'PATCH',
     '/v2/deployables/%s/program' % UNKNOWN,
     [{'path': '/bitstream_id', 'op': 'replace',
       'value': [{'image_uuid': IMAGE}]}], {}),
    ('list attributes', 'ok', 'GET', '/v2/attributes', None, {}),
    ('attribute: show bad uuid', 'bad', 'GET', '/v2/attributes/rc', None,
     {}),
    ('attribute: show unknown uuid', 'bad', 'GET',
     '/v2/attributes/' + UNKNOWN, None, {}),
    ('attribute: create on unknown deployable', 'bad', 'POST',
     '/v2/attributes', {'deployable_id': 9999, 'key': 'rc', 'value': 'X'},
     {}),
    ('attribute: create without key', 'bad', 'POST', '/v2/attributes',
     {'deployable_id': 1, 'value': 'X'}, {}),
    ('pagination: negative limit', 'bad', 'GET', DP + '?limit=-1', None, {}),
    ('pagination: unknown marker', 'bad', 'GET',
     DP + '?marker=' + UNKNOWN, None, {}),
]
