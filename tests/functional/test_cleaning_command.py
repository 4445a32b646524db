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

"""Cleaning with the ``command`` method: the operator's command runs in a
child process between tenants, its failure keeps the device out, and the
devices waiting for a busy worker are not offered.  The service over a
copy of a recorded sysfs tree, reporting to a real Placement, is
``test_lifecycle``'s; the other methods are
``tests/unit/accel_backend/test_lifecycle_cleaning.py``'s."""

import os

from tests.unit.accel_backend.test_lifecycle import GPU
from tests.unit.accel_backend.test_lifecycle import ServiceTestBase


class TestCleaningCommand(ServiceTestBase):

    def test_command_method(self):
        log = os.path.join(self.tmp, 'cleaned.log')
        svc = self.make_service(self.make_conf(cleaning={
            'methods': 'nvidia_gpu:command',
            'command': "sh -c 'echo \"$0\" >> %s'" % log}))
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        self.assertEqual(['available'],
                         list(svc.cleaner.clean_pending().values()))
        with open(log) as f:
            self.assertEqual(GPU + '\n', f.read())
        self.assertEqual('', self.reset_file(GPU))

    def test_failing_command(self):
        svc = self.make_service(self.make_conf(cleaning={
            'methods': 'nvidia_gpu:command',
            'command': "sh -c 'echo scrub failed on {address} >&2; "
                       "exit 3'"}))
        svc.discover_and_report()
        arq, _ = self.bind(svc, GPU)
        self.unbind(svc, arq)
        svc.cleaner.clean_pending()
        view = self.device_view(svc, GPU)
        self.assertEqual('clean_failed', view['status'])
        self.assertEqual('sh exited with status 3: scrub failed on %s' %
                         GPU, view['status_reason'])
        self.assertEqual((1, 1), self.reserved(GPU))

    def test_devices_waiting_for_a_worker_are_reserved(self):
        # One worker, a cleaning step that runs until the test lets it
        # finish: the second device waits dirty, and Placement must not
        # offer it meanwhile.
        go = os.path.join(self.tmp, 'go')
        svc = self.make_service(self.make_conf(cleaning={
            'workers': '1', 'poll_interval': '600',
            'methods': 'nvidia_gpu:command',
            'command': "sh -c 'while [ ! -e %s ]; do sleep 0.02; done'"
                       % go}))
        # Runs before svc.stop (which waits for the step), also on failure.
        self.addCleanup(lambda: open(go, 'w').close())
        svc.discover_and_report()
        second = '0000:ca:00.0'
        arqs = [self.bind(svc, address)[0] for address in (GPU, second)]
        # Only the cleaner: no report that would derive ``reserved``.
        svc.cleaner.start()
        for arq in arqs:
            self.unbind(svc, arq)
        self.wait_for(lambda: sorted(
            self.handle_states(svc, a)[0][0] for a in (GPU, second)) ==
            ['cleaning', 'dirty'])
        # The cleaner reserves right after the release's commit (a
        # Placement call that may take a moment on a loaded machine).
        self.wait_for(lambda: [self.reserved(a) for a in (GPU, second)] ==
                      [(1, 1), (1, 1)])
        self.assertEqual(['cleaning', 'dirty'], sorted(
            self.handle_states(svc, a)[0][0] for a in (GPU, second)))
        open(go, 'w').close()
        for address in (GPU, second):
            self.wait_for(lambda a=address: self.handle_states(svc, a) ==
                          [('available', None)])
            self.wait_for(lambda a=address: self.reserved(a) == (0, 1))
