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

"""The all-in-one cloud's compute node as a nested VM (``up --compute
nested``, the default of ``tools/run demo``).

The control plane stays on the machine (Keystone, Placement, Glance,
RabbitMQ, PostgreSQL, nova-api/-conductor/-scheduler, ``accel-backend-api``).
The compute node is L1 (``tools.nested``): a QEMU/TCG guest with a virtual
IOMMU and five emulated ``edu`` PCI functions, running this machine's
``/`` under an overlay.  In it run

* libvirtd (QEMU driver, TCG; ``tools.nested.libvirtd``);
* nova-compute with ``compute_driver = accel.LibvirtDriver`` and
  ``[libvirt] virt_type = qemu``, host ``compute-l1``;
* ``accel-backend-agent`` of host ``compute-l1``, discovering L1's real
  sysfs with a ``generic_pci`` device spec for the ``edu`` functions and
  the ``mdev`` driver for the kernel's ``mtty`` sample (``tools.nested.
  mtty``, loaded at boot, with ``systemd-udevd`` so that libvirt sees the
  mediated devices Nova creates through it).

L1 reaches the control plane on its own loopback (``tools.nested.session``
forwards each port to the machine), so the configs and the Keystone
catalog are the machine's; the machine reaches the agent's metrics through
a QEMU host forward.  The guest image is a kernel + initramfs pair in
Glance whose init lists the guest's PCI functions on its serial console.

Timing on 2 cores (TCG, no KVM): L1 boots in about 20 s; nova-compute and
the agent start in L1 in a few minutes (Python runs about 10 times slower
there).  So L1 boots first (``boot``) and its services import their
modules while the machine starts the control plane; ``start`` lets them
run once it serves (``tools.aio.l1_gate``).  The guest (L2, TCG inside
TCG) lists its devices 80 to 100 s after it starts (it boots the kernel's
PVH ``vmlinux``, not its bzImage, whose xz payload took as long again to
unpack there).  With KVM the same code runs at native speed.
"""

import json
import os
import shlex

from tools.aio import config
from tools.aio import devices
from tools.aio import procs
from tools.nested import image
from tools.nested import mtty
from tools.nested import node as node_mod
from tools.nested import session as session_mod

#: L1's host name (``tools/nested/stage2.sh``): Nova's host and node.
L1_HOST = 'compute-l1'
#: Ports of the machine L1 reaches on its own loopback.
FORWARDED = ('keystone', 'placement', 'glance', 'nova_api', 'accel',
             'neutron_stub', 'rabbit', 'postgres')
#: Where the services of L1 keep their state (L1's own tmpfs overlay).
L1_STATE = '/var/lib/nova-accel-l1'
#: Size of L1's instance store (GiB; a tmpfs, used pages only).
INSTANCES_GB = 8
#: Seconds for nova-compute and the agent to come up in L1 (TCG).
L1_START_TIMEOUT = 900
#: Seconds from ACTIVE until the guest has listed its PCI functions.
GUEST_BOOT_TIMEOUT = 600
#: Kernel command line of the guest: its init lists the PCI functions,
#: then stays up and lists them again on each change.  The rest skips
#: work of the kernel's boot this test guest has no use for, each slow
#: under TCG inside TCG: the crypto self-tests, the Spectre patching of
#: its code, three more serial ports, USB, zeroing each page it allocates
#: and the timer interrupt check.  Measured in a QEMU started by hand in
#: L1, one boot each way: 84 s to the power-off without them, 74 s with
#: them; with Nova's devices and an ``edu`` on vfio-pci, 95 s and 94 s to
#: the init.
GUEST_CMDLINE = ('console=ttyS0 panic=-1 quiet guest_watch '
                 'cryptomgr.notests mitigations=off 8250.nr_uarts=1 '
                 'usbcore.nousb init_on_alloc=0 no_timer_check')
#: The gate file of ``boot``'s services, in the shared directory.
GATE = 'services.go'
#: Each L1 service's console script entry point and the modules it loads
#: once configured (its compute driver), imported before the gate opens.
L1_ENTRY_POINTS = {
    'accel-backend-agent': ('accel_backend.cmd.agent:main', ()),
    'nova-compute': ('nova.cmd.compute:main', (
        'nova.virt.libvirt.driver', 'nova_accel.virt.libvirt.driver')),
}
PRIVSEP_SECTIONS = ('nova_sys_admin', 'privsep_osbrick',
                    'vif_plug_linux_bridge_privileged',
                    'vif_plug_ovs_privileged')


def shared(layout, *parts):
    """A path of the directory shared with L1 (same path in L1)."""
    return layout.path('nested', *parts)


def nova_conf(layout):
    """nova-compute's config in L1: the machine's ``nova-cpu.conf`` with
    the libvirt driver (TCG) and L1-local state."""
    ini = config.nova_cpu_conf(layout)
    ini.update('DEFAULT', {
        'compute_driver': 'accel.LibvirtDriver',
        'my_ip': '10.0.2.15',
        'state_path': L1_STATE + '/nova',
        'instances_path': L1_STATE + '/nova/instances',
    })
    # No KVM in L1: QEMU's TCG.  No CPU model element: QEMU's default
    # model, which TCG provides whatever the machine's CPU.
    ini.update('libvirt', {'virt_type': 'qemu', 'cpu_mode': 'none'})
    ini.set('oslo_concurrency', 'lock_path', L1_STATE + '/lock')
    # Replace a device that fails under a running guest (the admin
    # guide's "Replacing a device under a running server"); looks every
    # 5 s, so that a device that fell off the bus is replaced well within
    # the minute under TCG.
    ini.update('nova_accel', {'replace_failed': True,
                              'replace_failed_interval': 5})
    # nova-compute runs as root in L1, where there is no sudo: privsep
    # starts its helper directly.
    helper = '%s --config-file %s' % (
        os.path.join(layout.venv, 'bin', 'privsep-helper'),
        shared(layout, 'etc', 'nova-cpu.conf'))
    for section in PRIVSEP_SECTIONS:
        ini.set(section, 'helper_command', helper)
    return ini


def agent_conf(layout):
    """``accel-backend-agent``'s config in L1 (host ``compute-l1``,
    discovery on L1's own sysfs, metrics on every address of L1 so that
    the machine reaches them through the host forward)."""
    ini = config.accel_backend_conf(layout)
    # No database credentials on a compute node: the conductor on the
    # machine stores what the agent finds and cleans.
    ini.remove('database')
    ini.set('DEFAULT', 'state_path', L1_STATE + '/accel-backend')
    ini.set('oslo_concurrency', 'lock_path', L1_STATE + '/lock')
    ini.update('metrics', {'host': '0.0.0.0',
                           'port': layout.ports['l1_metrics']})
    # Reset each released function the kernel can reset (L1's edu
    # functions alone on a bus offer ``bus``; the others none, which
    # discovery cleans ``none``): cleaning on a real kernel.
    # Mediated devices are destroyed after each tenant: the next guest's
    # is created fresh.
    ini.set('cleaning', 'methods', 'generic_pci:flr,mdev:mdev')
    return ini


def write_configs(layout):
    """Write L1's configs into the shared directory; ``{name: path}``."""
    paths = {'nova': shared(layout, 'etc', 'nova-cpu.conf'),
             'agent': shared(layout, 'etc', 'accel-backend-agent.conf')}
    os.makedirs(shared(layout, 'etc'), exist_ok=True)
    for name, ini in (('nova', nova_conf(layout)),
                      ('agent', agent_conf(layout))):
        with open(paths[name], 'w') as f:
            f.write(ini.render())
    return paths


def upload_images(cloud, token, name):
    """The guest image: kernel (``aki``) and initramfs (``ari``) images
    and a 1 MiB raw root image ``name`` naming them (``kernel_id``,
    ``ramdisk_id``, ``os_command_line``); returns the root image's id."""
    layout = cloud.layout
    vmlinuz = image.guest_kernel(log=lambda msg: None)
    initrd = image.guest_initramfs(log=lambda msg: None)

    def upload(body, data):
        img, _ = cloud.http('POST', layout.url('glance', '/v2/images'),
                            dict(body, visibility='public'), token=token)
        cloud.http('PUT', layout.url('glance', '/v2/images/%s/file' %
                                     img['id']), raw=data, token=token)
        cloud.wait_for('image %s active' % body['name'], lambda: cloud.http(
            'GET', layout.url('glance', '/v2/images/%s' % img['id']),
            token=token)[0]['status'] == 'active')
        return img['id']

    with open(vmlinuz, 'rb') as f:
        kernel_id = upload({'name': name + '-kernel', 'disk_format': 'aki',
                            'container_format': 'aki'}, f.read())
    with open(initrd, 'rb') as f:
        ramdisk_id = upload({'name': name + '-initramfs',
                             'disk_format': 'ari',
                             'container_format': 'ari'}, f.read())
    return upload({'name': name, 'disk_format': 'raw',
                   'container_format': 'bare', 'kernel_id': kernel_id,
                   'ramdisk_id': ramdisk_id,
                   'os_command_line': GUEST_CMDLINE,
                   # Its init ignores ACPI shutdown: stop and reboot
                   # destroy the domain at once instead of after Nova's
                   # [DEFAULT] shutdown_timeout (60 s).
                   'os_shutdown_timeout': '0'}, bytes(1024 * 1024))


def boot(cloud, say):
    """Boot L1, start libvirtd in it and start its agent and nova-compute
    behind a gate (``tools.aio.l1_gate``): they import their modules
    (about a minute of Python under TCG) while the machine starts the
    control plane, and run once ``start`` opens the gate.

    :returns: the process record of L1's QEMU (in ``cloud.state``).
    :raises tools.aio.procs.ProcessFailed: L1 or libvirtd in it failed.
    """
    layout = cloud.layout
    paths = write_configs(layout)
    node = node_mod.NestedNode(host_forwards=[layout.ports['l1_metrics']],
                               log=say)
    sess = session_mod.Session(
        shared(layout), forward_ports=[layout.ports[n] for n in FORWARDED],
        node=node, log=say)
    try:
        sess.start()
    except node_mod.NestedError as e:
        raise procs.ProcessFailed('L1 did not start: %s' % e,
                                  sess.path('console.log'))
    rec = cloud.record({'name': 'nested-l1', 'pid': sess.pid,
                        'start': procs.start_time(sess.pid),
                        'log': sess.path('console.log'), 'argv': ['qemu']})
    py = os.path.join(layout.venv, 'bin', 'python')
    module = mtty.build(log=say)
    say('nested: L1 starts udevd and libvirtd and loads vfio-pci and the '
        'mtty sample')
    # The instances get a tmpfs of their own: the root overlay's 512 MiB
    # would leave Nova no DISK_GB inventory for a 1 GB root disk (tmpfs
    # pages count only when used).
    sess.sh('mkdir -p {s}/nova/instances {s}/lock {s}/accel-backend\n'
            'mount -t tmpfs -o size={gb}g tmpfs {s}/nova/instances\n'
            'modprobe vfio-pci\nmodprobe mdev\ninsmod {mtty}\n'
            '/lib/systemd/systemd-udevd --daemon\n'
            'cd {repo} && {py} -m tools.nested.libvirtd\n'
            .format(s=L1_STATE, gb=INSTANCES_GB, repo=layout.repo, py=py,
                    mtty=module))
    say('nested: L1 imports accel-backend-agent and nova-compute '
        '(accel.LibvirtDriver, virt_type qemu) while the control plane '
        'starts; Python under TCG: minutes')
    logs = {name: sess.spawn(name, command, env=l1_env(layout))
            for name, command in l1_services(layout, paths,
                                             gate=sess.path(GATE))}
    cloud.state['nested'] = {'out': sess.out, 'pid': sess.pid,
                             'logs': logs}
    cloud.save()
    return rec


def start(cloud, say, token, rec):
    """Open the gate of L1's services (``boot``) once the control plane
    serves; wait until the compute node and the devices are in Placement.

    :param rec: ``boot``'s answer.
    :raises tools.aio.procs.ProcessFailed: a service in L1 failed or did
        not come up in time (the message names its log).
    """
    layout = cloud.layout
    sess = attach(cloud)
    logs = cloud.state['nested']['logs']
    with open(sess.path(GATE), 'w') as f:
        f.write('the control plane serves\n')
    say('nested: the control plane serves; L1 starts accel-backend-agent '
        'and nova-compute')

    def compute_rp():
        got, _ = cloud.http('GET', layout.url(
            'placement', '/resource_providers?name=%s' % L1_HOST),
            token=token)
        return got['resource_providers']
    _wait(cloud, sess, 'nova-compute of L1 in Placement', compute_rp, rec,
          logs, 'nova-compute')
    say('nested: nova-compute of %s reported its compute node' % L1_HOST)

    def reported():
        # In Placement, not only in accel_backend's database (which has
        # the providers' uuids before the agent's report, minutes under
        # TCG, has written them): every device provider with its traits
        # (written after its inventory).
        got, _ = cloud.http('GET', layout.url(
            'accel', '/v2/deployables'), token=token)
        rps = {d['rp_uuid'] for d in got['deployables'] if d.get('rp_uuid')}
        if len(rps) < devices.expected_deployables(layout):
            return False
        got, _ = cloud.http('GET', layout.url(
            'placement', '/resource_providers?required=OWNER_CYBORG'),
            token=token,
            headers={'OpenStack-API-Version': 'placement 1.18'})
        return rps <= {rp['uuid'] for rp in got['resource_providers']}
    _wait(cloud, sess, 'the devices of L1 in Placement', reported, rec,
          logs, 'accel-backend-agent')
    say('nested: accel-backend-agent reported %d devices of L1' %
        devices.accelerator_total(layout))


def l1_env(layout):
    """The environment of the services in L1 (``{name: value}``)."""
    return {'PYTHONPATH': layout.repo, 'PYTHONDONTWRITEBYTECODE': '1',
            'OS_NOVA_DISABLE_EVENTLET_PATCHING': '1',
            'PATH': os.path.join(layout.venv, 'bin') + ':/usr/sbin:'
            '/usr/bin:/sbin:/bin'}


def l1_services(layout, paths, gate=None):
    """``[(name, shell command line)]`` of the services in L1, in the
    order they start (``paths``: ``write_configs``'s answer).

    :param gate: a path in L1: each imports its modules at once and runs
        once this file exists (``tools.aio.l1_gate``); None: the console
        script itself.  Either way the command line holds
        ``bin/<name> --config-file``.
    """
    services = []
    for name, key in (('accel-backend-agent', 'agent'),
                      ('nova-compute', 'nova')):
        command = '%s --config-file %s' % (
            os.path.join(layout.venv, 'bin', name), paths[key])
        if gate is not None:
            entry, preload = L1_ENTRY_POINTS[name]
            command = '%s -m tools.aio.l1_gate %s -- %s' % (
                os.path.join(layout.venv, 'bin', 'python'), ' '.join(
                    shlex.quote(arg) for arg in (
                        gate, entry, ','.join(preload))), command)
        services.append((name, command))
    return services


def _wait(cloud, sess, what, check, rec, logs, name):
    """``cloud.wait_for`` that also fails as soon as a service of L1
    exits, naming its log."""
    def check_or_fail():
        for service in logs:
            status = sess.exited(service)
            if status is not None:
                raise procs.ProcessFailed('%s in L1 exited with %d' % (
                    service, status), logs[service])
        return check()
    try:
        cloud.wait_for(what, check_or_fail, rec, timeout=L1_START_TIMEOUT,
                       interval=2)
    except procs.ProcessFailed as e:
        raise procs.ProcessFailed(str(e), e.log or logs[name])


def attach(cloud):
    """The running L1 of ``cloud`` (``session.Session``), or None."""
    state = cloud.state.get('nested')
    if not state:
        return None
    return session_mod.Session.attach(state['out'], state['pid'])


def device_state(sess, address):
    """``{'driver': ..., 'iommu_group': ...}`` of a PCI function in L1."""
    _, out = sess.sh(
        'd=/sys/bus/pci/devices/%s\n'
        'echo "{\\"driver\\": \\"$(basename "$(readlink $d/driver)")\\", '
        '\\"iommu_group\\": \\"$(basename "$(readlink $d/iommu_group)")\\"}"'
        '\n' % address, timeout=60)
    return json.loads(out.strip().splitlines()[-1])
