"""Tests of ``accel-backend-manage import-cyborg`` against a real Cyborg
17 database (made by Cyborg's own ``cyborg-dbsync``) and a real Cyborg 17
deployment (API, conductor, agent; ``tools.launch.cyborg``).

They need the Cyborg 17 venv (``python -m tools.launch.cyborg`` builds
it), so the default run (``tox -e py3``) does not load them; ``tox -e
cyborg-import`` (``ACCEL_CYBORG_IMPORT=1``) builds the venv and runs
them.  A missing venv or RabbitMQ fails them; it never skips them.
"""

from tests import opt_in

ENV = 'ACCEL_CYBORG_IMPORT'

load_tests = opt_in.load_tests_when(ENV, __file__)
