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

"""Accelerator service client used by hot-plug and by the drivers' hooks.

Hot-plugged ARQs are created and bound by the compute service on an
operator's request, not with a user's token during a build, so they are
handled with the compute service's own credentials: Nova's
``[service_user]`` keystoneauth options (the ones Nova already needs for
``send_service_user_token``), sent both as the user token and as the
``X-Service-Token`` that binding requires.  Only when ``[service_user]``
has no ``auth_type`` does the request context's token serve, in both
headers (as in a deployment without Keystone, e.g. accel_backend's noauth
mode, which takes any service token as the ``service`` role).  The
endpoint is found through Nova's ``[cyborg]`` options, as for Nova's own
client.
"""

from keystoneauth1 import service_token
import nova.conf
from nova import service_auth

from nova_accel.cyborg_client import AcceleratorClient
from nova_accel.hotplug import exception

CONF = nova.conf.CONF
SERVICE_USER_GROUP = 'service_user'


def accel_auth(context):
    """Return the keystoneauth plugin hot-plug calls are made with: a
    ``ServiceTokenAuthWrapper`` sending the service user's token (or the
    context's) as ``X-Auth-Token`` and ``X-Service-Token``.

    :raises NoServiceCredentials: no ``[service_user]`` auth and no token
        in ``context``.
    """
    auth = None
    if CONF.service_user.auth_type:
        auth = service_auth.get_service_auth_plugin(SERVICE_USER_GROUP)
    if auth is None:
        if context is None or not context.auth_token:
            raise exception.NoServiceCredentials()
        auth = context.get_auth_plugin()
    return service_token.ServiceTokenAuthWrapper(user_auth=auth,
                                                 service_auth=auth)


def accel_client(context):
    """Return an :class:`AcceleratorClient` for hot-plug work (over the
    process's one ``[cyborg]`` session,
    :func:`nova_accel.cyborg_client.transport.conf_session`)."""
    return AcceleratorClient.for_auth(accel_auth(context))
