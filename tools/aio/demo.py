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

"""The demo: a server with an accelerator, with the real ``openstack`` CLI.

Every step prints the command and what it answered.

On the nested compute node (``up --compute nested``) the server is a real
guest: the demo shows the domain XML libvirt holds in L1 (``virsh
dumpxml``), the device's driver in L1's kernel while the guest runs, the
guest's own console listing the device, and after the delete the device
back off ``vfio-pci`` and free in Placement.

With ``--compute fake`` the compute driver is ``accel.FakeDriver`` (no
libvirtd): the guest's composed ``<hostdev>`` elements come from
nova-compute's log (the same code as ``accel.LibvirtDriver`` composes them).
"""

import json
import os
import re
import subprocess
import time
import urllib.request
from xml.etree import ElementTree

from tools.aio import cloud as cloud_mod
from tools.aio import devices
from tools.aio import nested
from tools.aio import services

NAME = 'aio-demo'
#: Seconds nova-compute gets to remove a deleted server's ARQs and
#: allocations after the server shows deleted (``Demo.leftovers``).
SETTLE_TIMEOUT = 120


class Demo:
    def __init__(self, cloud):
        self.cloud = cloud
        self.env = cloud.env(OS_CLOUD='aio-admin')

    def osc(self, *args, show=True, check=True, columns=None):
        argv = ['openstack'] + list(args)
        if columns:
            for col in columns:
                argv += ['-c', col]
        if show:
            print('\n$ %s' % ' '.join(_quote(a) for a in argv), flush=True)
        t0 = time.monotonic()
        proc = subprocess.run(argv, env=self.env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL)
        took = time.monotonic() - t0
        if show:
            out = proc.stdout.rstrip()
            print(out if out else '(no output)')
            if proc.returncode:
                print(proc.stderr.rstrip())
            print('  [%.1f s]' % took)
        if check and proc.returncode:
            raise RuntimeError('openstack %s failed: %s' % (
                ' '.join(args), proc.stderr.strip()))
        return proc

    def cleanup(self):
        """Leftovers of an earlier, interrupted demo."""
        self.osc('server', 'delete', '--wait', NAME, show=False, check=False)
        self.osc('flavor', 'delete', NAME, show=False, check=False)
        self.osc('accelerator', 'device', 'profile', 'delete', NAME,
                 show=False, check=False)

    def run(self):
        layout = self.cloud.layout
        group = devices.demo_group(layout)
        print('== nova-accel all-in-one demo (cloud in %s)' %
              layout.run_dir)
        self.cleanup()
        self.osc('accelerator', 'device', 'list')
        self.osc('accelerator', 'device', 'profile', 'create', NAME,
                 '--group', ','.join('%s=%s' % kv for kv in group.items()))
        self.osc('flavor', 'create', '--ram', '512', '--disk', '1',
                 '--vcpus', '1', NAME, columns=['id', 'name'])
        self.osc('flavor', 'set', '--property',
                 'accel:device_profile=%s' % NAME, NAME)
        t0 = time.monotonic()
        self.osc('server', 'create', '--flavor', NAME, '--image',
                 services.IMAGE_NAME, '--nic', 'none', '--wait', NAME,
                 columns=['id', 'status'])
        boot = time.monotonic() - t0
        server = json.loads(self.osc(
            'server', 'show', NAME, '-f', 'json', show=False).stdout)
        self.osc('server', 'show', NAME, columns=[
            'id', 'name', 'status', 'OS-EXT-SRV-ATTR:host',
            'OS-EXT-SRV-ATTR:hypervisor_hostname', 'flavor'])
        self.osc('accelerator', 'arq', 'list')
        token = self.cloud.admin_token()
        alloc, _ = self.cloud.http('GET', layout.url(
            'placement', '/allocations/%s' % server['id']), token=token)
        print('\n== Placement allocations of the server '
              '(GET /allocations/%s)' % server['id'])
        print(json.dumps(alloc['allocations'], indent=1, sort_keys=True))
        sess = nested.attach(self.cloud)
        address = None
        if sess is None:
            print('\n== the guest\'s composed <hostdev> elements '
                  '(nova-compute log, accel.FakeDriver)')
            print(self.hostdevs(server['id']) or '(none)')
        else:
            address = self.real_guest(sess, server, token)
        self.bind_latency()
        self.osc('server', 'delete', '--wait', NAME)
        self.osc('accelerator', 'arq', 'list')
        arqs, allocations, waited = self.leftovers(server['id'], token)
        print('\n== after delete: ARQs of the server: %d, Placement '
              'allocations: %d (%.1f s after the server showed deleted)'
              % (len(arqs), len(allocations), waited))
        if address is not None and not self.released(sess, address):
            return 1
        self.osc('flavor', 'delete', NAME)
        self.osc('accelerator', 'device', 'profile', 'delete', NAME)
        print('\n== boot with --wait took %.1f s (CLI polls every 2 s)' %
              boot)
        if arqs or allocations:
            print('FAILED: the server left ARQs or allocations behind')
            return 1
        return 0

    def real_guest(self, sess, server, token):
        """Show what L1's kernel, libvirt and the guest see of the device;
        returns its PCI address in L1."""
        layout = self.cloud.layout
        arqs, _ = self.cloud.http('GET', layout.url(
            'accel', '/v2/accelerator_requests?instance=%s' % server['id']),
            token=token)
        info = arqs['arqs'][0]['attach_handle_info']
        address = '%s:%s:%s.%s' % (info['domain'], info['bus'],
                                   info['device'], info['function'])
        print('\n== the ARQ is Bound to PCI function %s of the compute node '
              '(L1)' % address)
        print('\n== in L1: the function while the guest runs (driver, IOMMU '
              'group)')
        print(json.dumps(nested.device_state(sess, address)))
        name = server['OS-EXT-SRV-ATTR:instance_name']
        _, xml = sess.sh('virsh -c qemu:///system dumpxml %s' % name,
                         timeout=120)
        print('\n== in L1: virsh dumpxml %s, its <hostdev>' % name)
        print(_hostdev_elements(xml) or '(none)')
        print('\n== the guest\'s console (openstack console log show): its '
              'PCI functions (TCG inside TCG: about 80 s to boot)')
        t0 = time.monotonic()
        want = '0x%s:0x%s' % (devices.EDU_SPEC['vendor_id'],
                              devices.EDU_SPEC['product_id'])
        log = ''
        while time.monotonic() - t0 < nested.GUEST_BOOT_TIMEOUT:
            log = self.osc('console', 'log', 'show', NAME, show=False,
                           check=False).stdout
            if 'guest: done' in log:
                break
            time.sleep(5)
        lines = [line for line in log.splitlines()
                 if line.startswith('guest-pci ')]
        print('\n'.join(lines) or log[-2000:] or '(empty console)')
        print('  [guest listed its devices %.0f s after ACTIVE]' % (
            time.monotonic() - t0))
        if not any(want in line for line in lines):
            raise RuntimeError('the guest does not list %s' % want)
        return address

    def leftovers(self, server_id, token):
        """The server's ARQs and Placement allocations once nova-compute
        has removed them, or what is left after ``SETTLE_TIMEOUT``
        seconds.

        The server shows deleted before they go: Nova 34's
        ``ComputeManager._delete_instance`` saves ``vm_state = deleted``
        (what ``server delete --wait`` waits for), then deletes the ARQs
        (``compute.utils.delete_arqs_if_needed``) and the allocations
        (``_complete_deletion``), then the instance record.

        :returns: ``(ARQs (list), allocations (dict), seconds waited)``.
        """
        layout = self.cloud.layout
        t0 = time.monotonic()
        while True:
            arqs, _ = self.cloud.http('GET', layout.url(
                'accel', '/v2/accelerator_requests?instance=%s' % server_id),
                token=token)
            alloc, _ = self.cloud.http('GET', layout.url(
                'placement', '/allocations/%s' % server_id), token=token)
            waited = time.monotonic() - t0
            if (not arqs['arqs'] and not alloc['allocations'] or
                    waited > SETTLE_TIMEOUT):
                return arqs['arqs'], alloc['allocations'], waited
            time.sleep(1)

    def released(self, sess, address):
        """After the delete: the function is off vfio-pci in L1 and free in
        Placement.  Returns whether it is."""
        layout = self.cloud.layout
        token = self.cloud.admin_token()
        print('\n== in L1 after delete: the function %s' % address)
        state = nested.device_state(sess, address)
        print(json.dumps(state))
        deps, _ = self.cloud.http('GET', layout.url(
            'accel', '/v2/deployables'), token=token)
        rp = next((d['rp_uuid'] for d in deps['deployables']
                   if address in json.dumps(d)), None)
        usages = {}
        if rp:
            usages, _ = self.cloud.http('GET', layout.url(
                'placement', '/resource_providers/%s/usages' % rp),
                token=token)
            usages = usages['usages']
        print('== its resource provider %s in Placement: usages %s' % (
            rp, json.dumps(usages, sort_keys=True)))
        if state['driver'] == 'vfio-pci' or any(usages.values()):
            print('FAILED: the device was not given back')
            return False
        return True

    def bind_latency(self):
        """Print the metrics address and accel_backend's bind latency
        histogram (``accel_bind_seconds``) as Prometheus scrapes it (from
        the conductor, which binds for the nested compute node)."""
        port = 'conductor_metrics' if self.cloud.layout.compute == \
            'nested' else 'metrics'
        url = 'http://127.0.0.1:%d/metrics' % self.cloud.layout.ports[port]
        print('\n== accel-backend metrics at %s: bind latency '
              '(accel_bind_seconds, PATCH to Bound)' % url)
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                text = resp.read().decode()
        except OSError as e:
            print('(metrics unreachable: %s)' % e)
            return
        for line in text.splitlines():
            if line.startswith('accel_bind_seconds') and (
                    '_bucket' not in line or not line.endswith(' 0.0')):
                print(line)

    def hostdevs(self, server_id):
        log = self.cloud.log('nova-compute')
        pattern = re.compile(r'Guest hostdevs of instance %s \((\d+)\): '
                             r'(.*)$' % re.escape(server_id))
        found = ''
        with open(log, errors='replace') as f:
            for line in f:
                match = pattern.search(line)
                if match:
                    found = match.group(2).replace('><hostdev', '>\n<hostdev')
        return found


def _hostdev_elements(xml):
    """The ``<hostdev>`` elements of a domain XML (str), as XML text."""
    root = ElementTree.fromstring(xml)
    return ''.join(ElementTree.tostring(h, encoding='unicode')
                   for h in root.findall('./devices/hostdev'))


def _quote(arg):
    if re.match(r'^[\w@%+=:,./-]+$', arg):
        return arg
    return "'%s'" % arg.replace("'", "'\\''")


def run():
    cloud = cloud_mod.Cloud.load()
    if cloud is None:
        print('no cloud is up: python -m tools.aio up')
        return 1
    os.environ.pop('OS_CLOUD', None)
    return Demo(cloud).run()
