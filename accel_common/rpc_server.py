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

"""Stopping an oslo.messaging RPC server, for both halves: accel_backend's
agent (binding casts) and nova_accel's compute-side hot-plug endpoint."""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


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
