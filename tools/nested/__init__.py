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

"""A nested compute node (L1): QEMU/TCG with a virtual IOMMU and emulated
PCI accelerators, running this checkout on a real Linux kernel
(``tools.nested.node``); its boot files are built once
(``tools.nested.image``).  Used by ``tests/nested`` (``tox -e nested``)."""
