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
