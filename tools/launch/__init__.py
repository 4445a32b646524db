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

"""How to launch each real component the tests, the benchmarks and the
all-in-one cloud run: one module per component
(:mod:`tools.launch.postgresql`, :mod:`tools.launch.rabbitmq`,
:mod:`tools.launch.placement`, :mod:`tools.launch.accel_backend`,
:mod:`tools.launch.cyborg`, :mod:`tools.launch.haproxy`), standard library
only (the all-in-one's launcher runs with nothing installed).

The modules know where the programs are, which arguments, files and
environment a private, loopback-only, throwaway instance needs, and when
it is ready.  The process lifecycle stays with the caller: the fixtures of
:mod:`tools.fixtures` (tests and benchmarks: children stopped at cleanup)
and detached processes recorded in ``state.json`` in ``tools/aio``.
"""

import socket
import threading


class ComponentMissing(RuntimeError):
    """A program of a component is not installed; the message names the
    Debian package (bindep.txt)."""


def free_port():
    """A TCP port on 127.0.0.1 that nobody listens on right now (another
    process may take it before the caller binds it).

    :returns: int.
    """
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


#: ``[next port, end]`` of ``listen_port``'s block: the 8,192 ports below
#: the ephemeral range, read at its first call.
_LISTEN_BLOCK = []
_LISTEN_LOCK = threading.Lock()


def listen_port():
    """A TCP port on 127.0.0.1 for a server started later, below the
    kernel's ephemeral range (``net.ipv4.ip_local_port_range``), that
    nobody has bound right now and that this process has not handed out
    before.

    ``free_port`` answers from the ephemeral range: while many processes
    start at once, the kernel can give the same port to one of their
    outgoing connections before the server binds it, which then fails
    (``EADDRINUSE``).  Ports below the range are never handed out that
    way.

    :returns: int.
    :raises RuntimeError: every port of the block is taken.
    """
    with _LISTEN_LOCK:
        if not _LISTEN_BLOCK:
            try:
                with open('/proc/sys/net/ipv4/ip_local_port_range') as f:
                    low = int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                low = 32768
            _LISTEN_BLOCK[:] = [max(1024, low - 8192), low]
        while _LISTEN_BLOCK[0] < _LISTEN_BLOCK[1]:
            port = _LISTEN_BLOCK[0]
            _LISTEN_BLOCK[0] += 1
            with socket.socket() as s:
                try:
                    s.bind(('127.0.0.1', port))
                except OSError:
                    continue
            return port
    raise RuntimeError('no free port below the ephemeral range')
