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

"""keystoneauth1 sessions and adapters for the services accel_backend
calls (Nova, Placement), built from oslo.config options.

Nothing here sends a request: the session, its transport (requests with
keystoneauth1's ``TCPKeepAliveAdapter`` and its pooled, kept-alive
connections), authentication, endpoint discovery, microversion headers
and retries are keystoneauth1's own, configured through its public
``keystoneauth1.loading`` API (keystoneauth1 5.x, ``loading/conf.py``,
``loading/session.py`` and ``loading/adapter.py``).
"""

from keystoneauth1 import loading as ks_loading


def session_from_conf(conf, group, auth=None):
    """A keystoneauth1 ``Session`` from the options of ``group``.

    :param conf: accel_backend ``ConfigOpts`` with keystoneauth1's
        session and auth options registered in ``group``
        (``accel_backend.conf`` registers them).
    :param group: the group name (str), e.g. ``nova``.
    :param auth: a keystoneauth1 auth plugin overriding the configured one.
    :returns: ``keystoneauth1.session.Session``.
    :raises keystoneauth1.exceptions.auth_plugins.MissingAuthPlugin: no
        ``auth_type`` configured and no ``auth`` given.
    """
    auth = auth or ks_loading.load_auth_from_conf_options(conf, group)
    return ks_loading.load_session_from_conf_options(conf, group, auth=auth)


def adapter_from_conf(conf, group, service_type, auth=None, **kwargs):
    """A keystoneauth1 ``Adapter`` built from the options of ``group``,
    on a session of ``session_from_conf``.

    :param conf: accel_backend ``ConfigOpts`` with the keystoneauth session,
        auth and adapter options registered in ``group`` (``placement``,
        ``nova``).
    :param group: the group name (str).
    :param service_type: service catalog type (``placement``, ``compute``).
    :param auth: a keystoneauth1 auth plugin overriding the configured one.
    :param kwargs: more ``Adapter`` arguments (``default_microversion``).
    :returns: ``keystoneauth1.adapter.Adapter``.
    :raises keystoneauth1.exceptions.auth_plugins.MissingAuthPlugin: no
        ``auth_type`` configured and no ``auth`` given.
    """
    auth = auth or ks_loading.load_auth_from_conf_options(conf, group)
    session = session_from_conf(conf, group, auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth, service_type=service_type,
        **kwargs)
