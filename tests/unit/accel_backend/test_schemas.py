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

"""``accel_backend.api.schemas.validate``: jsonschema with a format
checker, on every request schema of the API, over valid bodies and every
one-step break of them: a body is refused exactly when jsonschema finds
an error, and a ``"format": "uuid"`` field takes only UUIDs."""

import copy
import importlib
import pkgutil

import jsonschema
import testtools

from accel_backend.api import handlers
from accel_backend.api import schemas
from accel_backend import exception

UUID = '2e3a1f4c-6d0b-4a8e-9c1f-0b5d7e9a3c21'
OPS = [{'op': 'add', 'path': '/hostname', 'value': 'compute1'},
       {'op': 'add', 'path': '/device_rp_uuid', 'value': UUID},
       {'op': 'add', 'path': '/instance_uuid', 'value': UUID}]
#: Valid bodies of each schema, by its dotted name.
SEEDS = {
    'accel_backend.api.schemas.arq.CREATE': [
        {'device_profile_name': 'gpu'},
        {'device_profile_name': '', 'image_uuid': None,
         'device_profile_group_id': 0}],
    'accel_backend.api.schemas.arq.PATCH': [
        {UUID: OPS},
        {UUID: [{'op': 'remove', 'path': '/hostname'}],
         'other': OPS + [{'op': 'add', 'path': '/project_id',
                          'value': 'p'}]}],
    'accel_backend.api.schemas.device_profile.CREATE': [
        [{'name': 'gpu-1', 'groups': [{'resources:PGPU': '1',
                                       'trait:CUSTOM_X': 'required'}],
          'description': None, 'uuid': UUID}]],
    'accel_backend.api.schemas.deployable.PROGRAM': [
        [{'op': 'replace', 'path': '/bitstream_id',
          'value': [{'image_uuid': UUID}]}],
        [{'op': 'replace', 'path': '/bitstream_id',
          'value': {'image_uuid': UUID}}]],
    'accel_backend.api.schemas.attribute.CREATE': [
        {'deployable_id': 1, 'key': 'k', 'value': ''},
        {'deployable_id': UUID, 'key': 'k', 'value': 'v'}],
    'accel_backend.api.schemas.taint.CREATE': [
        {'key': 'k', 'effect': 'NoSchedule'},
        {'key': 'accel.openstack.org/drain', 'effect': 'NoExecute',
         'value': 'v', 'reason': 'fan', 'function': '0000:2a:00.0'}],
    'accel_backend.api.handlers.device_profile.DELETE_VALUES': [
        ['gpu', UUID], []],
}
#: What a leaf is replaced with.
VALUES = [None, True, False, 0, 1, -1, 1.0, 1.5, 2 ** 70, '', 'x',
          'x' * 256, 'é' * 255, 'é' * 256, 'x' * 65536, '\n', 'gpu\n',
          'a b', '/hostname', 'add', 'replace', UUID, UUID[:31],
          [], [1], ['x'] * 2, {}, {'x': 1}, {'image_uuid': UUID}]


def _schemas():
    """Every schema constant of the API: module-level dicts with a
    ``type``, in ``api.schemas.*`` and ``api.handlers.*``."""
    found = {}
    for package in (schemas, handlers):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(
                '%s.%s' % (package.__name__, info.name))
            for name, value in vars(module).items():
                if (name.isupper() and not name.startswith('_') and
                        isinstance(value, dict) and
                        'type' in value):
                    found['%s.%s' % (module.__name__, name)] = value
    return found


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key in value:
            yield from _paths(value[key], path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, path + (i,))


def _at(body, path):
    for step in path:
        body = body[step]
    return body


def _broken(seed):
    """One-step breaks of ``seed``: each node replaced by each of
    ``VALUES``, each key removed, a key added, each list emptied, its
    items repeated, an item added."""
    for path in _paths(seed):
        for value in VALUES:
            if not path:
                yield copy.deepcopy(value)
                continue
            body = copy.deepcopy(seed)
            _at(body, path[:-1])[path[-1]] = value
            yield body
        node = _at(seed, path)
        if isinstance(node, dict):
            for key in list(node) + [None]:
                body = copy.deepcopy(seed)
                target = _at(body, path)
                if key is None:
                    target['zz'] = 'x'
                else:
                    del target[key]
                yield body
        if isinstance(node, list):
            for change in ('empty', 'repeat', 'add'):
                body = copy.deepcopy(seed)
                target = _at(body, path)
                if change == 'empty':
                    target.clear()
                elif change == 'repeat':
                    target.extend(copy.deepcopy(target) * 40)
                else:
                    target.append(copy.deepcopy(target[0])
                                  if target else 'x')
                yield body


class SchemasTest(testtools.TestCase):

    def test_every_schema_has_seeds(self):
        self.assertEqual(sorted(SEEDS), sorted(_schemas()))

    def test_validate_refuses_what_jsonschema_refuses(self):
        checked = refused = 0
        for name, schema in sorted(_schemas().items()):
            reference = jsonschema.validators.validator_for(schema)(
                schema, format_checker=schemas.FORMAT_CHECKER)
            for seed in SEEDS[name]:
                schemas.validate(schema, seed)
                for body in _broken(seed):
                    if reference.is_valid(body):
                        schemas.validate(schema, body)
                    else:
                        refused += 1
                        self.assertRaises(exception.SchemaValidationError,
                                          schemas.validate, schema, body)
                    checked += 1
        # The corpus breaks something: not every body is valid.
        self.assertGreater(checked, 1000)
        self.assertGreater(refused, 500)

    def test_uuid_format_is_checked(self):
        from accel_backend.api.schemas import attribute
        body = {'deployable_id': 'not-a-uuid-but-long-enough-000000',
                'key': 'k', 'value': 'v'}
        err = self.assertRaises(exception.SchemaValidationError,
                                schemas.validate, attribute.CREATE, body)
        self.assertIn('deployable_id', err.detail)
        for good in (UUID, UUID.upper(), UUID.replace('-', '')):
            schemas.validate(attribute.CREATE, dict(body, deployable_id=good))

    def test_refusal_explained(self):
        from accel_backend.api.schemas import arq
        body = {UUID: [dict(OPS[0], op='move')]}
        err = self.assertRaises(exception.SchemaValidationError,
                                schemas.validate, arq.PATCH, body)
        self.assertIn('at %s/0/op: ' % UUID, err.detail)
        self.assertIn("'move' is not one of ['add', 'remove']", err.detail)
        schemas.validate(arq.PATCH, {UUID: OPS})
