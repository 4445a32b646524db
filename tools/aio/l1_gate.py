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

"""A service of the nested compute node started in two steps: its Python
modules imported at once, its ``main()`` run once a gate file exists.

Python in L1 runs under TCG, and importing nova-compute's modules takes
it about a minute: ``tools.aio.nested.boot`` starts L1's services this
way before the control plane on the machine is up, so that the imports
run while the machine starts Keystone, Placement and Nova, and
``tools.aio.nested.start`` opens the gate once they serve.  The program
then runs as its console script would (``sys.argv`` is the console
script's command line).

Usage (in L1)::

    python -m tools.aio.l1_gate GATE MODULE:FUNCTION PRELOAD[,PRELOAD...] \\
        -- PROGRAM [ARG...]
"""

import importlib
import os
import sys
import time

#: Seconds between two looks for the gate file.
POLL = 0.5


def main(argv=None):
    """Import the entry point's module, then the preloaded ones; wait
    for the gate; run.

    :param argv: ``[gate, 'module:function', 'preload,...', '--',
        program, arg...]`` (default ``sys.argv[1:]``).
    :returns: what the function returns (its exit status).
    :raises SystemExit: the command line is not of that shape.
    """
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 5 or argv[3] != '--':
        raise SystemExit(__doc__.split('Usage (in L1)::')[1])
    gate, entry, preload = argv[:3]
    module, _, function = entry.partition(':')
    # The entry point's module first, as its console script does: Nova's
    # ``nova.cmd.compute`` must come before any module that would import
    # eventlet (``nova.monkey_patch`` refuses to start after one).
    target = getattr(importlib.import_module(module), function or 'main')
    for name in filter(None, preload.split(',')):
        importlib.import_module(name)
    while not os.path.exists(gate):
        time.sleep(POLL)
    sys.argv = argv[4:]
    return target()


if __name__ == '__main__':
    sys.exit(main())
