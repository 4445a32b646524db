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

"""oslo.messaging transports of accel_backend.

Two parts of the service talk over oslo.messaging: the binding RPC between
``accel-backend-api`` and the agents (``accel_backend.agent.rpc``) and
the versioned notifications (``accel_backend.notifications``).  Both need
their ``ConfigOpts`` prepared the same way before a transport is built
from it, which is done here, below both, so that neither imports the
other: this module imports nothing of accel_backend.

The service's ``ConfigOpts`` is its own, never oslo.config's global
``cfg.CONF`` (Nova may run in the same process in tests), and nothing here
changes oslo.messaging's process-wide defaults.
"""

import oslo_messaging as messaging
from oslo_messaging import conffixture


#: Modules whose exceptions a conductor's answer may re-raise in the
#: caller as themselves (oslo.messaging's ``allowed_remote_exmods``);
#: any other remote exception arrives as ``oslo_messaging.RemoteError``.
REMOTE_EXCEPTION_MODULES = [
    'accel_backend.exception.base', 'accel_backend.exception.discovery',
    'accel_backend.exception.request', 'accel_backend.exception.resource',
    'accel_backend.exception.service']


def register_global_only_opts(conf):
    """Register on ``conf`` the oslo.messaging options it reads from a
    transport's conf but registers on ``cfg.CONF`` only.

    Those are ``[oslo_messaging_metrics]`` and ``[oslo_messaging_tracing]``
    (oslo.messaging 18.3.1 reads them from the transport's conf on every
    RPC cast, call and dispatch, registers them on the global
    ``cfg.CONF`` only, when ``oslo_messaging._metrics`` and ``._tracing``
    are imported, and leaves them out of ``oslo_messaging.opts.list_opts``).
    oslo.messaging's public way to put its options on a ``ConfigOpts`` of
    one's own is its ``ConfFixture`` (``oslo_messaging/conffixture.py``,
    whose docstring asks its users to go through it rather than name the
    options): building one registers every option the release reads from
    a transport's conf, these two groups included.  It is never set up
    as a fixture here, so it overrides and wraps nothing.

    Idempotent (registering an option again is a no-op).

    :param conf: an ``oslo_config.cfg.ConfigOpts``.
    """
    conffixture.ConfFixture(conf)


def get_rpc_transport(conf):
    """The RPC transport of ``[DEFAULT] transport_url`` (``rabbit://...``
    in production, ``fake://`` in tests); registers oslo.messaging's
    options on ``conf`` first.

    :param conf: accel_backend ``ConfigOpts``.
    :returns: ``oslo_messaging.Transport``; the caller owns it (its
        ``cleanup()``).
    :raises oslo_messaging.InvalidTransportURL: the URL cannot be parsed.
    :raises oslo_messaging.DriverLoadFailure: no driver for its scheme.
    """
    register_global_only_opts(conf)
    return messaging.get_rpc_transport(
        conf, allowed_remote_exmods=REMOTE_EXCEPTION_MODULES)
