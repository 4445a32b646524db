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

"""keystone (the Python package; ``keystone-manage`` and gunicorn from the
same environment), as the all-in-one cloud and the tests' Keystone fixture
(``tools.fixtures.keystone``) run it.

Keystone reads ``keystone.conf`` from ``$OS_KEYSTONE_CONFIG_DIR`` when
served as a WSGI application (keystone 30.0.0,
``keystone/server/flask/core.py``, ``_get_config_files``) and from
``--config-file`` in ``keystone-manage``; both are given the same file
here.  Its WSGI module parses ``sys.argv`` at import, so gunicorn loads it
through ``tools.aio.wsgi_app``.
"""

import os

from tools.launch import gunicorn as gunicorn_mod

#: The module whose ``application`` serves the API (keystone 30.0.0,
#: ``keystone/wsgi/api.py``).
WSGI_MODULE = 'keystone.wsgi.api'
#: gunicorn's application: the module loaded with a clean ``sys.argv``.
WSGI_APP = "tools.aio.wsgi_app:load('%s')" % WSGI_MODULE
#: Roles ``keystone-manage bootstrap`` creates (keystone 30.0.0,
#: ``keystone/cmd/bootstrap.py``: admin, member, reader); the others a
#: cloud needs are created through the API.
BOOTSTRAP_ROLES = ('admin', 'member', 'reader')


def config(connection, key_dir, hash_rounds=4):
    """``keystone.conf`` as ``{section: {option: value}}``: fernet tokens
    and receipts, their keys and the credential keys under ``key_dir``.

    :param connection: SQLAlchemy URL of Keystone's database.
    :param key_dir: directory of the key repositories (str path).
    :param hash_rounds: bcrypt rounds of stored passwords (int; the
        default 12 costs ~0.3 s per user and token on 2 cores, which a
        throwaway cloud does not need).
    :returns: dict.
    """
    return {
        'database': {'connection': connection},
        'token': {'provider': 'fernet'},
        'identity': {'password_hash_rounds': hash_rounds},
        'fernet_tokens': {'key_repository': os.path.join(key_dir,
                                                         'fernet-keys')},
        'fernet_receipts': {'key_repository': os.path.join(key_dir,
                                                           'fernet-keys')},
        'credential': {'key_repository': os.path.join(key_dir,
                                                      'credential-keys')},
    }


def environment(config_dir):
    """What the WSGI application needs to find ``keystone.conf`` in
    ``config_dir`` (dict, to add to the environment)."""
    return {'OS_KEYSTONE_CONFIG_DIR': config_dir}


def setup_argvs(manage, config_file, user, group, password, url, region):
    """The ``keystone-manage`` runs that make a new Keystone: schema,
    fernet and credential keys, then ``bootstrap`` (the ``admin`` user,
    project and role, the ``Default`` domain, the region and the identity
    endpoint).

    :param manage: path of ``keystone-manage``.
    :param config_file: path of ``keystone.conf``.
    :param user: owner (user name) of the key files.
    :param group: their group name.
    :param password: the ``admin`` user's password.
    :param url: the identity endpoint (``http://host:port/v3``) of every
        interface.
    :param region: the region's id.
    :returns: list of argv lists, to run in order.
    """
    head = [manage, '--config-file', config_file]
    owner = ['--keystone-user', user, '--keystone-group', group]
    return [
        head + ['db_sync'],
        head + ['fernet_setup'] + owner,
        head + ['credential_setup'] + owner,
        head + ['bootstrap', '--bootstrap-password', password,
                '--bootstrap-username', 'admin',
                '--bootstrap-project-name', 'admin',
                '--bootstrap-role-name', 'admin',
                '--bootstrap-service-name', 'keystone',
                '--bootstrap-region-id', region,
                '--bootstrap-admin-url', url,
                '--bootstrap-internal-url', url,
                '--bootstrap-public-url', url],
    ]


def gunicorn_argv(gunicorn, port, workers=1, threads=4, options=()):
    """gunicorn (``gunicorn``: its path) serving the API on
    ``127.0.0.1:port`` (:func:`tools.launch.gunicorn.argv`); the
    repository must be on the child's ``PYTHONPATH`` (``WSGI_APP``)."""
    return gunicorn_mod.argv(gunicorn, WSGI_APP, port, workers=workers,
                             threads=threads, options=list(options))
