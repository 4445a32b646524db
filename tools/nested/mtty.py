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

"""The kernel's ``mtty`` sample mediated-device driver, built once for
L1's kernel: a virtual serial card whose mediated devices a guest sees as
PCI functions (``vfio-pci`` device API), the parent Nova's own CI tests
its vGPU code with.

Built from Debian's packages, the kernel's own source and build files
(``bindep.txt``, profile ``nested``): ``samples/vfio-mdev/mtty.c`` out of
``/usr/src/linux-source-<major.minor>.tar.xz`` (package ``linux-source``)
and ``make M=`` against ``/usr/src/linux-headers-<version>`` (package
``linux-headers-amd64``, the same version ``linux-image-amd64`` depends
on: ``image.kernel``).  About 10 s on 2 cores; cached beside the kernel.
"""

import os
import shutil
import subprocess
import tempfile

from tools.nested import image

SOURCE = 'samples/vfio-mdev/mtty.c'


def build(log=print):
    """Build ``mtty.ko`` for L1's kernel once.

    :returns: the module's path (str).
    :raises RuntimeError: a package is missing (named in the message) or
        the build failed (with its output).
    """
    version = image.kernel_package()[len('linux-image-'):]
    out = os.path.join(image.cache_dir(), 'mtty-%s' % version)
    module = os.path.join(out, 'mtty.ko')
    if os.path.exists(module):
        return module
    series = '.'.join(version.split('.')[:2])
    tarball = '/usr/src/linux-source-%s.tar.xz' % series
    headers = '/usr/src/linux-headers-%s' % version
    for path, package in ((tarball, 'linux-source'),
                          (headers, 'linux-headers-amd64')):
        if not os.path.exists(path):
            raise RuntimeError('%s not found: install the Debian package %s '
                               '(bindep.txt, profile nested)' % (path,
                                                                 package))
    if shutil.which('make') is None:
        raise RuntimeError('make not found: install the Debian package make '
                           '(bindep.txt, profile nested)')
    log('nested: building the kernel\'s mtty sample for %s (once)' %
        version)
    with tempfile.TemporaryDirectory(dir=image.cache_dir()) as tmp:
        subprocess.run(['tar', '-xJf', tarball, '-C', tmp,
                        '--strip-components=3',
                        'linux-source-%s/%s' % (series, SOURCE)],
                       check=True)
        with open(os.path.join(tmp, 'Kbuild'), 'w') as f:
            f.write('obj-m := mtty.o\n')
        done = subprocess.run(['make', '-C', headers, 'M=%s' % tmp,
                               'modules'], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError('building mtty.ko failed: %s' % (
                done.stdout + done.stderr).strip()[-1500:])
        os.makedirs(out, exist_ok=True)
        shutil.copy(os.path.join(tmp, 'mtty.ko'), module + '.tmp')
        os.rename(module + '.tmp', module)
    return module
