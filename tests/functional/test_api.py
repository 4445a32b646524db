"""gabbi tests of accel_backend's HTTP API against the real WSGI app.

Each YAML file in ``gabbits/`` runs against a fresh accel_backend
``Service`` built by ``tests.functional.fixtures.gabbi``.
"""

import os
import warnings

from gabbi import driver
from gabbi import exception as gabbi_exc

from tests.functional.fixtures import gabbi as gabbi_fixtures

TESTS_DIR = 'gabbits'


def load_tests(loader, tests, pattern):
    """Provide a TestSuite to the discovery process."""
    test_dir = os.path.join(os.path.dirname(__file__), TESTS_DIR)
    with warnings.catch_warnings():
        # device_profile.yaml is named after the resource; the '_' only
        # matters to a stestr group_regex that splits names on '_'.
        warnings.simplefilter('ignore', gabbi_exc.GabbiSyntaxWarning)
        return driver.build_tests(
            test_dir, loader, host=None, intercept=gabbi_fixtures.app,
            fixture_module=gabbi_fixtures,
            inner_fixtures=[gabbi_fixtures.NoServerErrors],
            test_loader_name=__name__)
