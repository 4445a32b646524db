"""Load an OpenStack WSGI module under gunicorn with a clean ``sys.argv``.

Keystone (and Nova, Glance) parse ``sys.argv`` with oslo.config when their
WSGI module is imported; under gunicorn that holds gunicorn's own options
and the services refuse them.  gunicorn calls ``load('<module>')``
(``tools.aio.wsgi_app:load('keystone.wsgi.api')``) after parsing its
arguments, so the arguments can be dropped first.
"""

import importlib
import sys


def load(module):
    """:returns: ``<module>.application``."""
    del sys.argv[1:]
    return importlib.import_module(module).application
