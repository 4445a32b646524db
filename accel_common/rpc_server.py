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

"""oslo.messaging RPC helpers shared by both halves (accel_backend's agent
and conductor, nova_accel's compute-side hot-plug endpoint): starting and
stopping a server, building a client, checking an ``[upgrade_levels]``
version cap."""

from oslo_log import log as logging
import oslo_messaging as messaging

LOG = logging.getLogger(__name__)


def start(transport, exchange, topic, host, endpoints, what):
    """Serve ``topic`` in ``exchange`` as server ``host`` with the
    threading executor (oslo.messaging's ``get_rpc_server``).

    :param transport: an RPC transport.
    :param exchange: the exchange (str), given in the ``Target`` so that
        nothing global changes.
    :param topic: the topic (str); ``host`` (str) the server name.
    :param endpoints: list of endpoint objects.
    :param what: the server's purpose, for the log (str).
    :returns: the started ``MessageHandlingServer``.
    """
    target = messaging.Target(exchange=exchange, topic=topic, server=host)
    server = messaging.get_rpc_server(transport, target, endpoints,
                                      executor='threading')
    server.start()
    LOG.info('Serving the %s RPC API on topic %s, server %s', what, topic,
             host)
    return server


def client(transport, exchange, topic, namespace, version, version_cap,
           option):
    """An RPC client of ``topic`` whose sends are capped at
    ``version_cap`` (oslo.messaging's ``get_rpc_client``).

    :param exchange: the exchange (str); ``namespace`` (str) the API's.
    :param version: the newest version this release speaks (str ``M.N``).
    :param version_cap: the ``[upgrade_levels]`` cap (str) or None.
    :param option: the cap's option name, for the refusal.
    :raises ValueError: ``version_cap`` is above ``version``
        (``check_version_cap``).
    """
    check_version_cap(version_cap, version, option)
    target = messaging.Target(exchange=exchange, topic=topic,
                              namespace=namespace, version=version)
    return messaging.get_rpc_client(transport, target,
                                    version_cap=version_cap)


def stop(server, what):
    """Stop ``server`` (an ``oslo_messaging.MessageHandlingServer``, or
    None: nothing to do) and wait for its in-flight requests.

    Never raises: a failure is logged with ``what`` (str, the server's
    purpose) and the caller's shutdown goes on.
    """
    if server is None:
        return
    try:
        server.stop()
        server.wait()
    except Exception:
        LOG.exception('Stopping the %s RPC server failed', what)


def check_version_cap(cap, newest, option):
    """Refuse a version cap this release cannot speak.

    :param cap: the configured cap (str ``M.N``) or None (no cap).
    :param newest: the newest version this release speaks (str ``M.N``).
    :param option: the option's name for the message, e.g.
        ``[upgrade_levels] agent``.
    :raises ValueError: ``cap`` is above ``newest``.
    """
    def parts(version):
        return tuple(int(p) for p in version.split('.'))
    if cap is not None and parts(cap) > parts(newest):
        raise ValueError('%s = %s: this release speaks it up to %s' % (
            option, cap, newest))
