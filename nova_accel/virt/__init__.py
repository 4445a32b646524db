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

"""Nova compute drivers of nova_accel.

``LibvirtDriver`` and ``FakeDriver`` are imported lazily (PEP 562) so that
``nova_accel.virt.hostdev`` can be used without loading Nova's libvirt
driver.  The drivers depend on :mod:`nova_accel.attach` (through
:mod:`nova_accel.virt.attach_mixins`) and :mod:`nova_accel.compute`; neither
imports this package.
"""

__all__ = ['LibvirtDriver', 'FakeDriver']


def __getattr__(name):
    if name == 'LibvirtDriver':
        from nova_accel.virt.libvirt.driver import LibvirtDriver
        return LibvirtDriver
    if name == 'FakeDriver':
        from nova_accel.virt.fake import FakeDriver
        return FakeDriver
    raise AttributeError('module %r has no attribute %r' % (__name__, name))
