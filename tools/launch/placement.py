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

"""openstack-placement (the Python package; its console scripts and
gunicorn from the same environment).

Placement reads ``placement.conf`` from ``$OS_PLACEMENT_CONFIG_DIR`` when
served as a WSGI application, and from ``--config-file`` in
``placement-manage``; both are given the same directory here.
"""

import os

from tools.launch import gunicorn as gunicorn_mod

#: The module whose ``application`` serves the API (openstack-placement
#: 16.0.0, ``placement/wsgi/api.py``).
WSGI_MODULE = 'placement.wsgi.api'
#: Headers of an admin at the microversion the fixtures use (the
#: ``noauth2`` strategy takes the token ``admin`` as an admin).
MICROVERSION = '1.36'
ADMIN_HEADERS = {'x-auth-token': 'admin',
                 'openstack-api-version': 'placement ' + MICROVERSION}


def config(connection, auth_strategy='noauth2', authtoken=None):
    """``placement.conf`` text: ``[api] auth_strategy`` and the database.

    :param connection: SQLAlchemy URL of Placement's database.
    :param auth_strategy: ``noauth2`` or ``keystone``.
    :param authtoken: ``[keystone_authtoken]`` options (dict), for
        ``keystone``.
    :returns: str.
    """
    text = ('[DEFAULT]\ndebug = False\n[api]\nauth_strategy = %s\n'
            '[placement_database]\nconnection = %s\n' % (auth_strategy,
                                                         connection))
    if authtoken:
        text += '[keystone_authtoken]\n' + ''.join(
            '%s = %s\n' % kv for kv in authtoken.items())
    return text


def environment(config_dir):
    """What the WSGI application needs to find ``placement.conf`` in
    ``config_dir`` (dict, to add to the environment)."""
    return {'OS_PLACEMENT_CONFIG_DIR': config_dir}


def db_sync_argv(manage, config_dir):
    """``placement-manage db sync`` (``manage``: its path) on the
    ``placement.conf`` in ``config_dir``."""
    return [manage, '--config-file', os.path.join(config_dir,
                                                  'placement.conf'),
            'db', 'sync']


def gunicorn_argv(gunicorn, port, workers=1, threads=4):
    """gunicorn (``gunicorn``: its path) serving the API on
    ``127.0.0.1:port`` (:func:`tools.launch.gunicorn.argv`)."""
    return gunicorn_mod.argv(gunicorn, WSGI_MODULE + ':application', port,
                             workers=workers, threads=threads)
