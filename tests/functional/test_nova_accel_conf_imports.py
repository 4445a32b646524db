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

"""Each nova_accel module that reads ``[nova_accel]`` options reads them
when it is the first module of nova_accel a fresh interpreter imports
(options are registered by ``nova_accel.conf`` alone, on import), and
``nova_accel.conf`` lists them where Nova is not installed (the docs
environment).  One interpreter per module, started from this tree."""

import json
import os
import subprocess
import sys

import testtools

from tests.unit import test_nova_accel_conf_registration as scan

# Imports the module named by argv[1], then prints every [nova_accel]
# option as the module's CONF reads it.
READ_THROUGH_MODULE = '''
import importlib, json, sys
module = importlib.import_module(sys.argv[1])
conf = module.CONF
conf([], project='nova', default_config_files=[])
print(json.dumps({k: conf.nova_accel[k] for k in conf.nova_accel}))
'''
# Makes ``import nova`` fail, then lists the options.
WITHOUT_NOVA = '''
import json, sys
sys.modules['nova'] = None
import nova_accel.conf
[(group, opts)] = nova_accel.conf.list_opts()
print(json.dumps([group.name, sorted(o.dest for o in opts)]))
'''


def _module_name(rel):
    return rel[:-len('.py')].replace(os.sep, '.')


class FreshInterpreterTest(testtools.TestCase):

    def run_python(self, code, *args):
        env = dict(os.environ, PYTHONPATH=scan.ROOT,
                   OS_NOVA_DISABLE_EVENTLET_PATCHING='1')
        proc = subprocess.run([sys.executable, '-c', code] + list(args),
                              cwd=scan.ROOT, env=env, capture_output=True,
                              text=True, timeout=180)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def expected(self):
        import nova_accel.conf
        [(_, opts)] = nova_accel.conf.list_opts()
        return {o.dest: o.default for o in opts}

    def test_each_reader_alone(self):
        readers = sorted(_module_name(rel) for rel in scan.option_readers())
        self.assertIn('nova_accel.scheduler.weighers', readers)
        self.assertIn('nova_accel.hotplug.rpc', readers)
        expected = self.expected()
        for name in readers:
            self.assertEqual(expected,
                             self.run_python(READ_THROUGH_MODULE, name),
                             name)

    def test_options_listed_without_nova(self):
        self.assertEqual(['nova_accel', sorted(self.expected())],
                         self.run_python(WITHOUT_NOVA))
