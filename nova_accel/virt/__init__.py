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

Nova loads them through the shim ``nova.virt.accel``
(``[DEFAULT] compute_driver = accel.LibvirtDriver`` or
``accel.FakeDriver``, written by :mod:`nova_accel.driver_shim`), which
imports :mod:`nova_accel.virt.libvirt.driver` and
:mod:`nova_accel.virt.fake` themselves.  This package imports neither, so
that :mod:`nova_accel.virt.hostdev` is used without loading Nova's libvirt
driver.  The drivers depend on :mod:`nova_accel.hotplug` (through
:mod:`nova_accel.virt.hotplug_mixins`) and :mod:`nova_accel.arq_binding`;
neither imports this package.
"""
