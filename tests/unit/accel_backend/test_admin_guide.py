"""The admin guide (``doc/source/admin/index.rst``) names every metric,
bind failure reason and notification payload field the code has: a
metric or field added without its line there fails here."""

import os

import testtools

from accel_backend.binding import failure
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
