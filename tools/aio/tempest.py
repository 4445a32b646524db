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

"""``tempest run --regex nova_accel`` against the all-in-one cloud.

Makes a tempest workspace in the run dir (``tempest init``), two plain
flavors for ``[compute] flavor_ref``/``flavor_ref_alt``, writes
``etc/tempest.conf`` from the cloud's endpoints
(``client_config.tempest_conf``) and runs tempest from the venv, where
this bundle - and so the ``nova_accel`` tempest plugin - is installed.
"""

import os
import subprocess
import time

from tools.aio import client_config
from tools.aio import cloud as cloud_mod


def _flavor(cloud, token, name, ram):
    url = cloud.layout.url('nova_api', '/v2.1/flavors')
    found, _ = cloud.http('GET', url + '/detail', token=token)
    for flavor in found['flavors']:
        if flavor['name'] == name:
            return flavor['id']
    made, _ = cloud.http('POST', url, {'flavor': {
        'name': name, 'ram': ram, 'vcpus': 1, 'disk': 1}}, token=token)
    return made['flavor']['id']


def prepare(cloud, extra=None):
    """Workspace dir with its tempest.conf; returns the dir.

    :param extra: ``{section: {option: value}}`` set on top of
        ``client_config.tempest_conf`` (e.g. cyborg-tempest-plugin's options).
    """
    layout = cloud.layout
    workspace = layout.path('tempest', 'workspace')
    env = cloud.env()
    if not os.path.exists(os.path.join(workspace, 'etc')):
        subprocess.run([cloud.prog('tempest'), 'init', '--workspace-path',
                        layout.path('tempest', 'workspaces.yaml'),
                        workspace], env=env, check=True,
                       stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    token = cloud.admin_token()
    flavor = _flavor(cloud, token, 'aio-tempest', 128)
    flavor_alt = _flavor(cloud, token, 'aio-tempest-alt', 192)
    ini = client_config.tempest_conf(layout, cloud.state['image_id'],
                                     flavor, flavor_alt)
    for section, options in (extra or {}).items():
        ini.update(section, options)
    with open(os.path.join(workspace, 'etc', 'tempest.conf'), 'w') as f:
        f.write(ini.render())
    return workspace


def run_in(cloud, workspace, regex, concurrency=2, capture=False):
    """``tempest run --regex regex`` in ``workspace`` (``prepare``'s).

    :param capture: keep tempest's output (returned) instead of letting
        it through to this process's stdout.
    :returns: ``(exit status, output str or None)``.
    """
    argv = [cloud.prog('tempest'), 'run', '--regex', regex,
            '--concurrency', str(concurrency)]
    print('$ cd %s && %s' % (workspace, ' '.join(argv)), flush=True)
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=workspace, env=cloud.env(),
                          stdin=subprocess.DEVNULL, text=True,
                          capture_output=capture)
    print('tempest run took %.0f s (exit %d); log: %s' % (
        time.monotonic() - t0, done.returncode,
        os.path.join(workspace, 'tempest.log')), flush=True)
    return done.returncode, done.stdout


def run(regex='nova_accel', concurrency=2):
    cloud = cloud_mod.Cloud.load()
    if cloud is None:
        print('no cloud is up: python -m tools.aio up')
        return 1
    return run_in(cloud, prepare(cloud), regex, concurrency)[0]
