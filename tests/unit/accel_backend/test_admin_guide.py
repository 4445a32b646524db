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

"""The admin guide (``doc/source/admin/index.rst``) names every metric,
bind failure reason and notification payload field the code has: a
metric or field added without its line there fails here."""

import os

import testtools

from accel_backend.conductor import failure
from accel_backend import metrics
from accel_backend import notifications

GUIDE = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                     os.pardir, 'doc', 'source', 'admin', 'index.rst')


class AdminGuideTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        with open(GUIDE) as f:
            self.text = f.read()

    def missing(self, names):
        return sorted(n for n in names if '``%s' % n not in self.text)

    def test_every_metric(self):
        names = {family.name for family in metrics.REGISTRY.collect()
                 if family.name.startswith('accel_')}
        self.assertIn('accel_bind_failures', names)
        self.assertEqual([], self.missing(names))

    def test_every_bind_failure_reason(self):
        self.assertEqual([], self.missing(failure.REASONS))

    def test_every_payload_its_version_and_fields(self):
        for name, fields in notifications.PAYLOADS.items():
            self.assertIn('``%s`` %s' % (name, notifications.VERSIONS[name]),
                          self.text)
            self.assertEqual([], self.missing(fields), name)
