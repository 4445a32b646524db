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

"""Reliability tests of accel_backend: crashes, lost events, Placement
faults, hostile input, load, reconciliation (see RELIABILITY.md).

Most of them take minutes and start real processes, so the default test
run (``tox -e py3``, ``.ci/run``) leaves them out: a test class marked
with ``@slow`` runs only when ``ACCEL_RELIABILITY=1`` is set, as ``tox -e
reliability`` does (or ``ACCEL_RELIABILITY=1 stestr run tests.reliability``).
The quick ones (bodies, parsers) always run.
"""

import os
import unittest

ENV = 'ACCEL_RELIABILITY'


def enabled():
    return os.environ.get(ENV) == '1'


def slow(cls):
    """Class decorator: the class's tests are loaded only when
    ``ACCEL_RELIABILITY=1`` (see ``load_tests``)."""
    cls.reliability_slow = True
    return cls


def load_tests(loader, standard_tests, pattern):
    this_dir = os.path.dirname(__file__)
    found = loader.discover(start_dir=this_dir, pattern=pattern or 'test*.py')
    if enabled():
        standard_tests.addTests(found)
        return standard_tests

    def keep(suite):
        for test in suite:
            if isinstance(test, unittest.TestSuite):
                yield from keep(test)
            elif not getattr(test, 'reliability_slow', False):
                yield test
    standard_tests.addTests(list(keep(found)))
    return standard_tests
