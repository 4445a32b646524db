#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS,
#    WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
#    See the License for the specific language governing permissions and
#    limitations under the License.
"""``accel_common.placement_errors.error_code`` on the answers a real
Placement gives (openstack-placement's fixture, served in process), and
``first_error``, the one reader of the errors document."""

import ast
import os
import uuid

import requests
import testtools

from accel_common import placement_errors
from tests import placement_fixture

HEADERS = {'X-Auth-Token': 'admin',
           'OpenStack-API-Version': 'placement 1.36'}


class TestErrorCode(placement_fixture.PlacementTestCase):

    def call(self, method, path, body=None):
        return requests.request(method, self.placement.endpoint + path,
                                json=body, headers=HEADERS, timeout=10)

    def test_codes_of_a_real_placement(self):
        rp = str(uuid.uuid4())
        self.assertEqual(200, self.call('POST', '/resource_providers', {
            'uuid': rp, 'name': 'rp'}).status_code)
        # A stale generation: Placement's concurrent update code.
        resp = self.call('PUT', '/resource_providers/%s/inventories' % rp, {
            'resource_provider_generation': 7,
            'inventories': {'VCPU': {'total': 1}}})
        self.assertEqual(409, resp.status_code)
        self.assertEqual(placement_errors.CONCURRENT_UPDATE,
                         placement_errors.error_code(resp))
        # A success: no error document.
        ok = self.call('GET', '/resource_providers/%s' % rp)
        self.assertIsNone(placement_errors.error_code(ok))


class TestFirstError(testtools.TestCase):

    def test_documents(self):
        first = {'status': 409, 'code': 'c', 'title': 't', 'detail': 'd'}
        for body, expected in (
                ({'errors': [first, {'code': 'second'}]}, first),
                ({'errors': []}, None),
                ({'errors': ['not an object']}, None),
                ({'errors': {'code': 'c'}}, None),
                ({'error_message': 'x'}, None),
                (['errors'], None),
                ('errors', None),
                (None, None)):
            with self.subTest(body=body):
                self.assertEqual(expected,
                                 placement_errors.first_error(body))


class TestOneReader(testtools.TestCase):
    """No other module of nova-accel reads the errors document itself."""

    ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..',
                                        '..', '..'))
    HOME = os.path.join('accel_common', 'placement_errors.py')

    @staticmethod
    def reads(tree):
        """Lines of ``x['errors']`` and ``x.get('errors', ...)``."""
        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.Subscript) and \
                    isinstance(node.ctx, ast.Load):
                key = node.slice
            elif isinstance(node, ast.Call) and node.args and \
                    getattr(node.func, 'attr', None) == 'get':
                key = node.args[0]
            if isinstance(key, ast.Constant) and key.value == 'errors':
                yield node.lineno

    def test_reads_are_found(self):
        tree = ast.parse("a = r.json()['errors'][0]\n"
                         "b = body.get('errors')\n"
                         "c = {'errors': []}\n")
        self.assertEqual([1, 2], sorted(self.reads(tree)))

    def test_only_first_error_reads_it(self):
        found = []
        for top in ('accel_backend', 'accel_common', 'nova_accel', 'tools'):
            for dirpath, _, files in os.walk(os.path.join(self.ROOT, top)):
                for name in files:
                    if not name.endswith('.py'):
                        continue
                    path = os.path.join(dirpath, name)
                    rel = os.path.relpath(path, self.ROOT)
                    with open(path, encoding='utf-8') as f:
                        tree = ast.parse(f.read(), path)
                    found.extend('%s:%d' % (rel, line)
                                 for line in self.reads(tree)
                                 if rel != self.HOME)
        self.assertEqual([], sorted(found))
