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

"""Run accel_backend's discovery once on this host and print JSON (run
inside L1 by ``tests/nested``; no database, no Placement, no Nova)::

    python -m tools.nested.l1_discovery --driver generic_pci \\
        --spec '{"vendor_id": "1234", "product_id": "11e8", ...}'

Output: ``{"functions": [...every PCI function sysfs shows...],
"deployables": [...what the drivers report...]}``.
"""

import argparse
import dataclasses
import json
import os
import sys
import tempfile

from accel_backend.agent.discovery import drivers
from accel_backend.agent.discovery import sysfs
from accel_backend import conf as conf_mod


def main(argv=None):
    """:returns: exit status (int)."""
    parser = argparse.ArgumentParser()
    parser.add_argument('--driver', action='append', default=[])
    parser.add_argument('--spec', action='append', default=[])
    parser.add_argument('--root', default='/sys/bus/pci/devices')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'accel-backend.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\nhost = compute-l1\nstate_path = %s\n'
                    '[discovery]\nsysfs_root = %s\nenabled_drivers = %s\n'
                    % (tmp, args.root, ','.join(args.driver)))
            for spec in args.spec:
                f.write('device_spec = %s\n' % spec)
        conf = conf_mod.new_conf(config_files=[path])
        found = drivers.discover_all(drivers.load(conf, args.driver))
    functions = sysfs.scan(args.root)
    json.dump({
        'functions': [dataclasses.asdict(fn) for fn in functions],
        # What the kernel itself lists, before sysfs.reset_methods.
        'reset_method_files': {fn.address: sysfs.read_value(os.path.join(
            args.root, fn.address, 'reset_method')) for fn in functions},
        'deployables': [dict(dataclasses.asdict(d),
                             traits=sorted(d.traits)) for d in found]},
        sys.stdout, indent=1, sort_keys=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
