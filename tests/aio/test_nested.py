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

"""The all-in-one cloud's nested compute node: the configs L1's services
load, the QEMU command line and the session's command channel - nothing
here boots L1 (``tests/nested`` does)."""

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

from accel_backend import conf as accel_conf
from tests.aio.test_config import layout
from tests.aio.test_config import parse
from tools.aio import devices
from tools.aio import nested
from tools.nested import node
from tools.nested import session


def nested_layout():
    return layout(compute='nested', host=nested.L1_HOST,
                  discovery=['l1_edu', 'l1_mtty'])


class TestL1Configs(unittest.TestCase):

    def setUp(self):
        self.layout = nested_layout()

    def test_nova_compute_runs_the_libvirt_driver_on_tcg(self):
        nova = parse(nested.nova_conf(self.layout))
        self.assertEqual(('accel.LibvirtDriver', 'compute-l1'),
                         (nova['DEFAULT']['compute_driver'],
                          nova['DEFAULT']['host']))
        self.assertEqual(('qemu', 'none'), (nova['libvirt']['virt_type'],
                                            nova['libvirt']['cpu_mode']))
        # Its state stays in L1, where the run dir does not exist.
        for key in ('state_path', 'instances_path'):
            self.assertTrue(nova['DEFAULT'][key].startswith(
                nested.L1_STATE), key)
        self.assertFalse(nova.has_section('database'))
        # No sudo in L1: privsep starts its helper itself, with this conf.
        for section in nested.PRIVSEP_SECTIONS:
            helper = nova[section]['helper_command'].split()
            self.assertEqual(os.path.join(self.layout.venv, 'bin',
                                          'privsep-helper'), helper[0])
            self.assertEqual(nested.shared(self.layout, 'etc',
                                           'nova-cpu.conf'), helper[-1])

    def test_agent_discovers_l1s_edu_functions(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'agent.conf')
            with open(path, 'w') as f:
                f.write(nested.agent_conf(self.layout).render())
            conf = accel_conf.new_conf(config_files=[path])
        self.assertEqual(('compute-l1', 'compute-l1'), (
            conf.host, conf.discovery.resource_provider_name))
        self.assertEqual(['generic_pci', 'mdev'],
                         conf.discovery.enabled_drivers)
        # The kernel's mtty sample, one type (12 units per parent).
        self.assertEqual([devices.MTTY_TYPE], conf.discovery.mdev_types)
        # L1's real sysfs, not a recorded tree.
        self.assertEqual('/sys/bus/pci/devices', conf.discovery.sysfs_root)
        # The slot-08 unit, the root-bus pair pooled, then every other
        # edu function.
        self.assertEqual([devices.EDU_UNIT_SPEC, devices.EDU_POOL_SPEC,
                          devices.EDU_SPEC], [
            json.loads(s) for s in conf.discovery.device_spec])
        self.assertEqual(('0.0.0.0', self.layout.ports['l1_metrics']),
                         (conf.metrics.host, conf.metrics.port))
        self.assertTrue(conf.state_path.startswith(nested.L1_STATE))
        # Released functions are reset where L1's kernel can.
        # Mediated devices are destroyed after each tenant.
        self.assertEqual({'generic_pci': 'flr', 'mdev': 'mdev'},
                         conf.cleaning.methods)
        # No database credentials on the compute node.
        self.assertNotIn('[database]', nested.agent_conf(
            self.layout).render())

    def test_the_demo_and_tempest_ask_for_an_edu_function(self):
        lay = self.layout
        self.assertEqual('1', devices.demo_group(lay)['resources:CUSTOM_EDU'])
        self.assertEqual('1',
                         devices.tempest_group(lay)['resources:CUSTOM_EDU'])
        # Seven functions: a unit of two, the root-bus pair pooled, two
        # in one IOMMU group, one on node 1: four deployables, five
        # accelerators, two of them in the pool.
        # Plus the mtty parent: one deployable, 12 mediated devices.
        self.assertEqual(5, devices.expected_deployables(lay))
        self.assertEqual(17, devices.accelerator_total(lay))
        self.assertEqual(12, devices.accelerator_total(
            lay, devices.MTTY_GROUP))
        self.assertEqual(1, devices.accelerator_total(
            lay, devices.UNIT_GROUP))
        self.assertEqual(2, devices.accelerator_total(
            lay, devices.POOLED_GROUP))
        self.assertEqual(2, devices.accelerator_total(
            lay, devices.demo_group(lay)))

    def test_write_configs_into_the_shared_directory(self):
        with tempfile.TemporaryDirectory() as tmp:
            lay = layout(run_dir=tmp, compute='nested',
                         host=nested.L1_HOST, discovery=['l1_edu'])
            paths = nested.write_configs(lay)
            self.assertEqual({'nova', 'agent'}, set(paths))
            for path in paths.values():
                # The shared directory: L1 sees it at the same path.
                self.assertTrue(path.startswith(os.path.join(tmp, 'nested')))
                with open(path) as f:
                    self.assertIn('[DEFAULT]', f.read())


class TestQemuCommandLine(unittest.TestCase):

    def test_user_network_and_host_forwards(self):
        argv = node.NestedNode(host_forwards=[4567]).argv(
            'vmlinuz', 'initrd', '/out', '/mods')
        netdev = argv[argv.index('-netdev') + 1]
        self.assertEqual('user,id=net0,hostfwd=tcp:127.0.0.1:4567-:4567',
                         netdev)
        self.assertIn('virtio-net-pci,netdev=net0,addr=0a.0', argv)

    def test_without_an_iommu(self):
        # A virtual IOMMU before every PCI device, and its kernel
        # parameters; neither when L1 stands for a host without one.
        argv = node.NestedNode().argv('vmlinuz', 'initrd', '/out', '/mods')
        iommu = argv.index('intel-iommu,intremap=on,caching-mode=on')
        self.assertLess(iommu, argv.index(
            'virtio-net-pci,netdev=net0,addr=0a.0'))
        self.assertIn('intel_iommu=on', argv[argv.index('-append') + 1])
        argv = node.NestedNode(iommu=False).argv('vmlinuz', 'initrd', '/out',
                                                 '/mods')
        self.assertEqual([], [a for a in argv if 'iommu' in a])

    def test_every_numa_node_has_a_socket_of_vcpus(self):
        # Without it QEMU 7.2 puts both vCPUs in node 0, and Nova fits
        # no guest NUMA cell on node 1.
        argv = node.NestedNode(cpus=4).argv('vmlinuz', 'initrd', '/out',
                                            '/mods')
        self.assertEqual('4,sockets=2,cores=2,threads=1',
                         argv[argv.index('-smp') + 1])
        self.assertEqual(['node,nodeid=0,memdev=m0,cpus=0-1',
                          'node,nodeid=1,memdev=m1,cpus=2-3'],
                         [a for a in argv if a.startswith('node,')])


def _wait_for(check, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


class FakeL1(threading.Thread):
    """The L1 side of the command channel, run as the shell job L1 runs
    (``session.JOB``) but on this machine: the protocol, not the VM."""

    def __init__(self, out):
        super().__init__(daemon=True)
        self.out = out

    def run(self):
        subprocess.run(['/bin/sh', '-c', session.JOB % {'ports': ''}],
                       cwd=self.out, check=False)


class TestCommandChannel(unittest.TestCase):

    def test_commands_run_and_answer_in_order(self):
        out = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, out, True)
        l1 = FakeL1(out)
        l1.start()
        stop = os.path.join(out, 'session.stop')
        self.addCleanup(l1.join, 10)
        self.addCleanup(lambda: open(stop, 'w').close())
        _wait_for(lambda: os.path.exists(os.path.join(out, 'session.ready')))
        sess = session.Session.attach(out, os.getpid())
        rc, text = sess.sh('echo hello; echo err >&2')
        self.assertEqual((0, 'hello\nerr\n'), (rc, text))
        rc, text = sess.sh('exit 3', check=False)
        self.assertEqual(3, rc)
        self.assertRaises(session.CommandFailed, sess.sh, 'false')
        # A second session of the same process on the same L1 (``attach``
        # after ``start``) gets its own answers, not the first one's.
        again = session.Session.attach(out, os.getpid())
        self.assertEqual((0, 'again\n'), again.sh('echo again'))
        log = sess.spawn('bg', 'echo "from $NAME"; sleep 0.1',
                         env={'NAME': 'the background'})
        self.assertTrue(_wait_for(lambda: 'from the background' in (
            open(log).read() if os.path.exists(log) else '')),
            'the background command did not run')
        open(stop, 'w').close()
        l1.join(10)
        self.assertFalse(l1.is_alive())

    def test_a_dead_l1_is_an_error_not_a_hang(self):
        with tempfile.TemporaryDirectory() as out:
            os.makedirs(os.path.join(out, 'cmd'))
            dead = subprocess.Popen(['true'])
            dead.wait()
            sess = session.Session.attach(out, dead.pid)
            self.assertRaises(node.NestedError, sess.sh, 'true', timeout=5)
