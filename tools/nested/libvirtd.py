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

"""Inside L1: libvirtd (QEMU driver, TCG) from this machine's packages
with a configuration of its own: QEMU runs as root with no security driver
and writes character-device logs itself (``stdio_handler = "file"``, no
virtlogd), as fits a throw-away compute node.

    python -m tools.nested.libvirtd     # start it, return when it answers
"""

import os
import subprocess
import sys
import time

LIBVIRT_CONF_DIR = '/etc/libvirt'
QEMU_CONF = '''user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
namespaces = []
stdio_handler = "file"
'''
SOCKET = '/run/libvirt/libvirt-sock'


def _ensure_account(name, uid):
    """Debian's libvirt resolves its compiled-in ``libvirt-qemu`` user and
    ``kvm`` group at start even when qemu.conf says root; L1's overlay gets
    them when this machine lacks them (no libvirt-daemon-system here)."""
    for path, line in (('/etc/group', '%s:x:%d:' % (name, uid)),
                       ('/etc/passwd', '%s:x:%d:%d::/var/lib/libvirt:'
                                       '/usr/sbin/nologin' % (name, uid,
                                                              uid))):
        with open(path) as f:
            if any(entry.split(':')[0] == name for entry in f):
                continue
        with open(path, 'a') as f:
            f.write(line + '\n')


def start(timeout=120):
    """Start libvirtd (daemonized) and wait for its socket.

    :param timeout: seconds.
    :raises RuntimeError: the socket did not appear in time.
    """
    _ensure_account('kvm', 64054)
    _ensure_account('libvirt-qemu', 64055)
    os.makedirs(LIBVIRT_CONF_DIR, exist_ok=True)
    with open(os.path.join(LIBVIRT_CONF_DIR, 'qemu.conf'), 'w') as f:
        f.write(QEMU_CONF)
    for d in ('/run/libvirt', '/var/lib/libvirt/qemu', '/var/log/libvirt',
              '/var/cache/libvirt'):
        os.makedirs(d, exist_ok=True)
    subprocess.run(['libvirtd', '-d'], check=True)
    deadline = time.monotonic() + timeout
    while not os.path.exists(SOCKET):
        if time.monotonic() > deadline:
            raise RuntimeError('libvirtd did not open %s' % SOCKET)
        time.sleep(0.5)


if __name__ == '__main__':
    start()
    sys.exit(0)
