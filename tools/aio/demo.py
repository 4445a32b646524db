"""The demo: a server with an accelerator, with the real ``openstack`` CLI.

Every step prints the command and what it answered.  The guest's composed
``<hostdev>`` elements come from nova-compute's log: the compute driver
here is ``accel.FakeDriver`` (no KVM, no libvirtd), which composes them with
the same code as ``accel.LibvirtDriver`` and logs them.
"""

import json
import os
import re
import subprocess
import time
import urllib.request

from tools.aio import cloud as cloud_mod
from tools.aio import config

NAME = 'aio-demo'


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
        group = config.demo_group(layout)
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
                 cloud_mod.IMAGE_NAME, '--nic', 'none', '--wait', NAME,
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
        print('\n== the guest\'s composed <hostdev> elements '
              '(nova-compute log, accel.FakeDriver)')
        print(self.hostdevs(server['id']) or '(none)')
        self.bind_latency()
        self.osc('server', 'delete', '--wait', NAME)
        self.osc('accelerator', 'arq', 'list')
        arqs, _ = self.cloud.http('GET', layout.url(
            'accel', '/v2/accelerator_requests?instance=%s' % server['id']),
            token=token)
        alloc, _ = self.cloud.http('GET', layout.url(
            'placement', '/allocations/%s' % server['id']), token=token)
        print('\n== after delete: ARQs of the server: %d, Placement '
              'allocations: %d' % (len(arqs['arqs']),
                                   len(alloc['allocations'])))
        self.osc('flavor', 'delete', NAME)
        self.osc('accelerator', 'device', 'profile', 'delete', NAME)
        print('\n== boot with --wait took %.1f s (CLI polls every 2 s)' %
              boot)
        if arqs['arqs'] or alloc['allocations']:
            print('FAILED: the server left ARQs or allocations behind')
            return 1
        return 0

    def bind_latency(self):
        """Print the metrics address and accel_backend's bind latency
        histogram (``accel_bind_seconds``) as Prometheus scrapes it."""
        url = 'http://127.0.0.1:%d/metrics' % self.cloud.layout.ports[
            'metrics']
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
