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

"""Hostile input: the API answers 4xx, never 5xx, and never crashes.

``TestSchemathesis`` (about 1.5 minutes) runs with ``tox -e
reliability``; the rest takes seconds and runs with every test run.

* schemathesis generates requests from ``accel_backend/api/openapi.yaml``
  (valid ones and ones that break the document: wrong types, missing
  fields, odd strings, bad path and query parameters) and sends them to
  the real WSGI app in this process; every response must pass
  schemathesis' ``not_a_server_error`` check.
* hypothesis property tests of the device-profile group checks and of the
  ARQ JSON-patch parser: whatever JSON comes in, they return or raise an
  ``AccelBackendError`` with a 4xx status.
* oversize bodies answer 413 (oslo.middleware's ``max_request_body_size``)
  and deeply nested JSON answers 400 (it used to be a 500 from a
  ``RecursionError``).
"""

import json
import os
import string

import fixtures
import hypothesis
from hypothesis import strategies as st
import schemathesis
from schemathesis import checks as st_checks
from schemathesis.generation.modes import GenerationMode
import testtools
import webob

import accel_backend
from accel_backend.api import schemas
from accel_backend.api.schemas import arq as arq_schema
from accel_backend.api.schemas import device_profile as dp_schema
from accel_backend import exception
from tests import reliability
from tests.reliability import fixtures as rel_fixtures
from tests.reliability import test_crash

OPENAPI = os.path.join(os.path.dirname(accel_backend.__file__), 'api',
                       'openapi.yaml')
EXAMPLES = int(os.environ.get('ACCEL_FUZZ_EXAMPLES', '60'))
SETTINGS = hypothesis.settings(
    max_examples=EXAMPLES, deadline=None, database=None,
    suppress_health_check=list(hypothesis.HealthCheck))
BODY_PATHS = [('POST', '/v2/device_profiles'),
              ('POST', '/v2/accelerator_requests'),
              ('PATCH', '/v2/accelerator_requests'),
              ('POST', '/v2/attributes'),
              ('PATCH', '/v2/deployables/%s/program' %
               '00000000-0000-0000-0000-000000000000')]


def call(app, method, path, body=b'', headers=None):
    hdrs = {'X-Auth-Token': 'admin', 'X-Service-Token': 'nova',
            'Content-Type': 'application/json'}
    hdrs.update(headers or {})
    req = webob.Request.blank(path, method=method, body=body, headers=hdrs)
    return req.get_response(app)


@reliability.slow
class TestSchemathesis(testtools.TestCase):
    """Every operation of the OpenAPI document, positive and negative."""

    def setUp(self):
        super().setUp()
        # The app logs every refused request; keep the output readable.
        self.useFixture(fixtures.FakeLogger())
        self.svc = self.useFixture(rel_fixtures.InProcessService())
        self.schema = schemathesis.openapi.from_path(OPENAPI)

    def _fuzz(self, mode):
        ops = [r.ok() for r in self.schema.get_all_operations()]
        self.assertGreater(len(ops), 20)
        failures, calls = [], [0]
        for op in ops:
            strategy = op.as_strategy(generation_mode=mode,
                                      headers={'X-Auth-Token': 'admin'})

            @SETTINGS
            @hypothesis.given(case=strategy)
            def run(case):
                calls[0] += 1
                resp = case.call(app=self.svc.app)
                try:
                    case.validate_response(
                        resp, checks=[st_checks.not_a_server_error])
                except AssertionError as e:
                    failures.append('%s %s query=%r body=%r: %s' % (
                        case.method, case.formatted_path, case.query,
                        case.body, str(e)[:300]))
            try:
                run()
            except hypothesis.errors.Unsatisfiable:
                # Nothing to negate (no parameters, no body).
                self.assertEqual(GenerationMode.NEGATIVE, mode, op.label)
        self.addDetail('requests', testtools.content.text_content(
            str(calls[0])))
        test_crash.record_result('fuzz_%s' % mode.value, {
            'operations': len(ops), 'requests': calls[0],
            'server_errors': len(failures)})
        self.assertEqual([], failures)
        self.assertGreater(calls[0], len(ops) * 5)

    def test_valid_requests_never_5xx(self):
        self._fuzz(GenerationMode.POSITIVE)

    def test_invalid_requests_never_5xx(self):
        self._fuzz(GenerationMode.NEGATIVE)


def _assert_4xx_or_ok(fn, *args):
    try:
        fn(*args)
    except exception.AccelBackendError as e:
        assert 400 <= e.status < 500, (e.status, e)


json_scalars = (st.none() | st.booleans() | st.integers() |
                st.floats(allow_nan=True) | st.text(max_size=20))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) |
    st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20)
_prefixes = st.sampled_from(['resources:', 'trait:', 'accel:', 'resource:',
                             '', 'RESOURCES:', 'trait:CUSTOM_',
                             'resources:CUSTOM_'])
_names = st.text(alphabet=string.ascii_letters + string.digits + '_:-²٣ ',
                 max_size=12) | st.sampled_from(
    ['PGPU', 'VGPU', 'CUSTOM_FPGA', 'CUSTOM_', 'FPGA', 'CUSTOM_NVIDIA_T4',
     'HW_GPU_API_CUDA_V10_1', 'bitstream_id'])
_values = st.text(max_size=8) | st.sampled_from(
    ['1', '0', '1024', '1025', '-1', '01', '²', '٣', 'required',
     'forbidden', ' 1', '1 ', '1e3', '99999999999999999999999'])
group_strategy = st.dictionaries(
    st.builds(lambda p, n: p + n, _prefixes, _names), _values, max_size=6)


class TestDeviceProfileGroups(testtools.TestCase):

    @SETTINGS
    @hypothesis.given(groups=st.lists(group_strategy, max_size=4))
    def test_check_groups_only_4xx(self, groups):
        _assert_4xx_or_ok(dp_schema.check_groups, groups)

    @SETTINGS
    @hypothesis.given(body=json_values | st.lists(st.fixed_dictionaries(
        {'name': st.text(max_size=10), 'groups': st.lists(
            group_strategy | json_values, max_size=3)})))
    def test_create_pipeline_only_4xx(self, body):
        # What the handler does: schema first, then the semantic checks.
        def pipeline(body):
            schemas.validate(dp_schema.CREATE, body)
            profile = body[0] if isinstance(body, list) else body
            dp_schema.check_groups(profile['groups'])
        _assert_4xx_or_ok(pipeline, body)

    def test_known_answers(self):
        dp_schema.check_groups([{'resources:PGPU': '2',
                                 'trait:CUSTOM_X': 'required',
                                 'accel:bitstream_id': 'x'}])
        for bad in ([{}], [{'trait:CUSTOM_X': 'required'}],
                    [{'resources:PGPU': '²'}], [{'resources:PGPU': '0'}],
                    [{'resources:pgpu': '1'}], [{'foo': '1'}]):
            e = self.assertRaises(exception.InvalidDeviceProfile,
                                  dp_schema.check_groups, bad)
            self.assertEqual(400, e.status)


_uuids = st.uuids().map(str)
_op = st.fixed_dictionaries(
    {'op': st.sampled_from(['add', 'remove']),
     'path': st.sampled_from(['/hostname', '/device_rp_uuid',
                              '/instance_uuid', '/project_id'])},
    optional={'value': _uuids | json_values | st.text(min_size=250,
                                                      max_size=260)})
patch_strategy = st.dictionaries(
    _uuids | st.text(max_size=40), st.lists(_op, min_size=1, max_size=4),
    min_size=1, max_size=4)


class TestPatchParser(testtools.TestCase):

    @SETTINGS
    @hypothesis.given(body=patch_strategy, v21=st.booleans())
    def test_parse_patch_only_4xx(self, body, v21):
        _assert_4xx_or_ok(arq_schema.parse_patch, body, v21)

    @SETTINGS
    @hypothesis.given(body=patch_strategy | json_values, v21=st.booleans())
    def test_patch_pipeline_only_4xx(self, body, v21):
        def pipeline(body):
            schemas.validate(arq_schema.PATCH, body)
            binds, unbinds = arq_schema.parse_patch(body, v21)
            # What comes out is what the handler relies on.
            bind_fields = {p[1:] for p in arq_schema.BIND_PATHS}
            for arq_uuid, fields in binds.items():
                assert bind_fields <= set(fields) <= bind_fields | {
                    'project_id'}, fields
                assert all(isinstance(v, str) for v in fields.values())
            assert all(isinstance(u, str) for u in unbinds)
        _assert_4xx_or_ok(pipeline, body)

    def test_bind_and_unbind(self):
        arq, rp, inst = ('%08d-0000-0000-0000-000000000000' % i
                         for i in range(3))
        binds, unbinds = arq_schema.parse_patch({arq: [
            {'op': 'add', 'path': '/hostname', 'value': 'h'},
            {'op': 'add', 'path': '/device_rp_uuid', 'value': rp},
            {'op': 'add', 'path': '/instance_uuid', 'value': inst}]}, False)
        self.assertEqual({arq: {'hostname': 'h', 'device_rp_uuid': rp,
                                'instance_uuid': inst}}, binds)
        self.assertEqual([], unbinds)
        binds, unbinds = arq_schema.parse_patch(
            {arq: [{'op': 'remove', 'path': '/hostname'}]}, False)
        self.assertEqual(({}, [arq]), (binds, unbinds))


class TestBodies(testtools.TestCase):
    """Oversize and deeply nested bodies on every path that takes one."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())
        self.svc = self.useFixture(rel_fixtures.InProcessService())
        self.max = self.svc.service.conf.oslo_middleware \
            .max_request_body_size

    def test_oversize_bodies_413(self):
        big = json.dumps({'x': 'y' * self.max}).encode()
        for method, path in BODY_PATHS:
            resp = call(self.svc.app, method, path, big)
            self.assertEqual(413, resp.status_code, (method, path))
            self.assertEqual('accel.request_too_large',
                             resp.json_body['errors'][0]['code'])
            # A client lying about the length is cut off too.
            resp = call(self.svc.app, method, path, b'{}',
                        headers={'Content-Length': str(10 ** 9)})
            self.assertEqual(413, resp.status_code, (method, path))
            self.assertEqual('accel.request_too_large',
                             resp.json_body['errors'][0]['code'])

    def test_just_under_the_limit_is_read(self):
        body = json.dumps({'device_profile_name': 'x' * (self.max - 100)})
        resp = call(self.svc.app, 'POST', '/v2/accelerator_requests',
                    body.encode())
        self.assertEqual(400, resp.status_code)
        self.assertEqual('accel.schema_validation',
                         resp.json_body['errors'][0]['code'])

    def test_deeply_nested_json_400(self):
        for depth in (33, 500, 990, 3000, 15000):
            for body in (b'[' * depth + b']' * depth,
                         b'{"a":' * depth + b'1' + b'}' * depth):
                for method, path in BODY_PATHS:
                    resp = call(self.svc.app, method, path, body)
                    self.assertEqual(400, resp.status_code,
                                     (depth, method, path, resp.body[:200]))
                    self.assertEqual('accel.invalid_json',
                                     resp.json_body['errors'][0]['code'])

    def test_nesting_at_the_limit_reaches_the_schema(self):
        body = b'[' * 32 + b']' * 32
        resp = call(self.svc.app, 'POST', '/v2/device_profiles', body)
        self.assertEqual(400, resp.status_code)
        self.assertEqual('accel.schema_validation',
                         resp.json_body['errors'][0]['code'])

    def test_garbage_bodies_400(self):
        for body in (b'\xff\xfe\x00', b'{"a": 1', b'NaN', b'\x00' * 100,
                     '"\ud800"'.encode('utf-8', 'surrogatepass'),
                     b'{"device_profile_name": "\\ud800"}'):
            for method, path in BODY_PATHS:
                resp = call(self.svc.app, method, path, body)
                self.assertIn(resp.status_code, (400, 404, 409),
                              (body, method, path, resp.body[:200]))

    def test_attribute_deployable_id_types(self):
        # JSON schema calls 1.0 an integer and has no size limit: both
        # used to be 500s (TypeError, SQLite OverflowError).
        for value, status in ((1.0, 201), (2.0, 201), (10 ** 20, 400),
                              (2 ** 63, 400),
                              (2 ** 63 - 1, 404), (True, 400)):
            resp = call(self.svc.app, 'POST', '/v2/attributes', json.dumps(
                {'deployable_id': value, 'key': 'k', 'value': 'v'}).encode())
            self.assertEqual(status, resp.status_code, (value, resp.body))

    def test_undecodable_urls_400(self):
        # Not UTF-8, or NUL: webob raised UnicodeDecodeError on req.GET /
        # req.path (500s, and a crash of the error handler itself, which
        # logs req.path).
        for path in ('/v2/device_profiles?name=%ED%A0%80',
                     '/v2/device_profiles?name=%FF',
                     '/v2/accelerator_requests?instance=%FF',
                     '/v2/devices?hostname=%ED%A0%80', '/v2/devices?%FF=1',
                     '/v2/attributes?deployable_id=%ED%A0%80',
                     '/v2/devices?vendor=%00', '/v2/%FF',
                     '/v2/device_profiles/%ED%A0%80'):
            for method in ('GET', 'DELETE', 'PATCH', 'POST'):
                resp = call(self.svc.app, method, path, b'{}')
                self.assertEqual(400, resp.status_code, (method, path))
                self.assertEqual('accel.bad_request',
                                 resp.json_body['errors'][0]['code'])

    def test_nul_and_surrogates_in_bodies_400(self):
        utf16 = '{"device_profile_name": "a\\u0000b"}'.encode('utf-16')
        for body in (b'{"device_profile_name": "a\\u0000b"}',
                     b'{"device_profile_name": "\\udc00"}',
                     b'{"\\ud800": 1}',
                     b'{"device_profile_name": "\\uD83D"}',
                     # A surrogate encoded in UTF-8 (json.loads takes
                     # bytes with surrogatepass), not escaped.
                     b'{"device_profile_name": "\xed\xa0\x80"}',
                     # UTF-16: json.loads detects it.
                     utf16):
            resp = call(self.svc.app, 'POST', '/v2/accelerator_requests',
                        body)
            self.assertEqual(400, resp.status_code, body)
            self.assertEqual('accel.invalid_json',
                             resp.json_body['errors'][0]['code'])
        # An escaped backslash before "u0000" is no NUL: the name is
        # looked up (no such profile).
        resp = call(self.svc.app, 'POST', '/v2/accelerator_requests',
                    b'{"device_profile_name": "a\\\\u0000b"}')
        self.assertEqual(404, resp.status_code, resp.text)
