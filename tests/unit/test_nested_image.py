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

"""The guest kernel's ``vmlinux`` out of a bzImage
(``tools.nested.image.vmlinux_of``), on bzImages laid out as the kernel's
``Documentation/x86/boot.rst`` says (boot protocol 2.08+): setup
sectors, ``payload_offset`` and ``payload_length``, and a payload that
ends with the 4-byte uncompressed size the kernel's build appends."""

import gzip
import lzma
import struct

import testtools

from tools.nested import image

ELF = b'\x7fELF' + bytes(range(256)) * 64


def bzimage(payload, setup_sects=3, offset=0x2cc):
    """A bzImage of ``setup_sects`` setup sectors whose protected-mode
    code holds ``payload`` at ``offset``, followed by its size."""
    head = bytearray((setup_sects or 4) * 512 + 512)
    head[0x1f1] = setup_sects
    body = bytearray(offset) + payload + struct.pack('<I', len(ELF))
    struct.pack_into('<II', head, 0x248, offset, len(payload) + 4)
    return bytes(head + body) + b'trailing bytes of the image'


class VmlinuxOfTest(testtools.TestCase):

    def test_xz_payload(self):
        self.assertEqual(ELF, image.vmlinux_of(bzimage(
            lzma.compress(ELF, format=lzma.FORMAT_XZ))))

    def test_gzip_payload_and_zero_setup_sects_meaning_four(self):
        self.assertEqual(ELF, image.vmlinux_of(bzimage(
            gzip.compress(ELF), setup_sects=0, offset=0x1000)))

    def test_another_compression_is_not_unpacked(self):
        self.assertIsNone(image.vmlinux_of(bzimage(b'\x28\xb5\x2f\xfd' +
                                                   bytes(64))))

    def test_a_payload_without_an_elf_is_not_used(self):
        self.assertIsNone(image.vmlinux_of(bzimage(
            lzma.compress(b'not an ELF', format=lzma.FORMAT_XZ))))
