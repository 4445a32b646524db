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

"""``accel_backend/api/openapi.yaml`` describes exactly the API served.

* it is a valid OpenAPI document (openapi-spec-validator);
* its (path, method) pairs are those of ``api.route_table.ROUTES``;
* each request body names (``x-accel-schema``) the JSON schema the API
  validates that body with, and its schema equals it, so the two cannot
  drift; every body schema of ``api/schemas`` is documented.
"""

import importlib
import os
import pkgutil

import openapi_spec_validator
import testtools
import yaml

import accel_backend.api
from accel_backend.api import route_table
from accel_backend.api import schemas as schemas_pkg

DOC = os.path.join(os.path.dirname(accel_backend.api.__file__),
                   'openapi.yaml')
METHODS = ('get', 'put', 'post', 'delete', 'options', 'head', 'patch',
           'trace')


def load():
    with open(DOC) as f:
        return yaml.safe_load(f)


def doc_path(route):
    """The OpenAPI path of a route (paths must start with ``/``)."""
    return route or '/'


def body_schema_names():
    """``module.NAME`` of every request body schema in api/schemas: the
    public module-level dicts."""
    names = set()
    for info in pkgutil.iter_modules(schemas_pkg.__path__):
        mod = importlib.import_module('%s.%s' % (schemas_pkg.__name__,
                                                 info.name))
        for name, value in vars(mod).items():
            if (name.isupper() and not name.startswith('_') and
                    isinstance(value, dict)):
                names.add('%s.%s' % (mod.__name__, name))
    return names


class OpenAPITest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.doc = load()

    def operations(self):
        for path, item in self.doc['paths'].items():
            for method, op in item.items():
                if method in METHODS:
                    yield path, method, op

    def test_is_valid_openapi_3_1(self):
        self.assertEqual('3.1.0', self.doc['openapi'])
        openapi_spec_validator.validate(self.doc)

    def test_paths_and_methods_match_the_route_table(self):
        served = {(doc_path(path), method.lower())
                  for path, methods in route_table.ROUTES.items()
                  for method in methods}
        documented = {(path, method) for path, method, _ in
                      self.operations()}
        self.assertEqual(set(), served - documented,
                         'served but not documented')
        self.assertEqual(set(), documented - served,
                         'documented but not served')

    def test_path_parameters_are_those_of_the_routes(self):
        for path, item in self.doc['paths'].items():
            params = {p['name'] for p in item.get('parameters', ())
                      if p.get('in') == 'path'}
            wanted = {seg[1:-1] for seg in path.split('/')
                      if seg.startswith('{')}
            self.assertEqual(wanted, params, path)

    def test_request_bodies_are_the_api_schemas(self):
        seen = set()
        for path, method, op in self.operations():
            body = op.get('requestBody')
            if body is None:
                continue
            name = body.get('x-accel-schema')
            self.assertIsNotNone(name, '%s %s: request body without '
                                 'x-accel-schema' % (method, path))
            module, _, attr = name.rpartition('.')
            expected = getattr(importlib.import_module(module), attr)
            self.assertEqual(expected,
                             body['content']['application/json']['schema'],
                             '%s %s drifted from %s' % (method, path, name))
            seen.add(name)
        self.assertEqual(body_schema_names(), seen)

    def test_errors_document_the_stable_code(self):
        error = self.doc['components']['schemas']['Error']
        item = error['properties']['errors']['items']
        self.assertIn('code', item['required'])
        for path, method, op in self.operations():
            for status, resp in op['responses'].items():
                if int(status) < 400 or status == '401':
                    continue
                if '$ref' in resp:
                    resp = self.doc['components']['responses'][
                        resp['$ref'].rsplit('/', 1)[1]]
                self.assertEqual(
                    {'$ref': '#/components/schemas/Error'},
                    resp['content']['application/json']['schema'],
                    '%s %s %s' % (method, path, status))

    def test_every_operation_has_a_unique_id(self):
        ids = [op['operationId'] for _, _, op in self.operations()]
        self.assertEqual(len(ids), len(set(ids)))
