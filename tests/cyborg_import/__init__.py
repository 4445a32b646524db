"""Tests of ``accel-backend-manage import-cyborg`` against a real Cyborg
17 database (made by Cyborg's own ``cyborg-dbsync``) and a real Cyborg 17
deployment (API, conductor, agent; ``tools.launch.cyborg``).

They need the Cyborg 17 venv (``python -m tools.launch.cyborg`` builds
it), so the default run (``tox -e py3``) does not load them; ``tox -e
cyborg-import`` (``ACCEL_CYBORG_IMPORT=1``) builds the venv and runs
them.  A missing venv or RabbitMQ fails them; it never skips them.
"""

import os

ENV = 'ACCEL_CYBORG_IMPORT'


def load_tests(loader, standard_tests, pattern):
    if os.environ.get(ENV) != '1':
        return standard_tests
    this_dir = os.path.dirname(__file__)
    standard_tests.addTests(loader.discover(
        start_dir=this_dir, pattern=pattern or 'test*.py'))
    return standard_tests
