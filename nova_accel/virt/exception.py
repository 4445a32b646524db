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

"""Typed exceptions raised by the ``nova_accel.virt`` package.

The binding errors (``ARQBindingTimeout``, ``ARQBindingFailed``) are
:mod:`nova_accel.arq_binding.exception`'s.

It subclasses :class:`nova.exception.NovaException`, so when it
escapes from a compute driver during a build Nova's compute manager records
it as the instance fault with its formatted message (and aborts the build,
deleting the instance's accelerator requests, exactly as it does for its own
binding errors).
"""

from nova import exception as nova_exception


class InvalidAttachHandle(nova_exception.NovaException):
    """An ARQ's attach handle cannot be turned into a libvirt ``<hostdev>``.

    Raised by :mod:`nova_accel.virt.hostdev` for an unknown
    ``attach_handle_type``, a missing or malformed ``attach_handle_info``
    (PCI address fields out of range, not hexadecimal), or an MDEV
    ``attach_handle_uuid`` that is not a UUID.

    :param arq_uuid: UUID (str) of the offending ARQ (may be None).
    :param reason: what is wrong with the handle (str).
    """

    msg_fmt = ('Invalid attach handle in accelerator request %(arq_uuid)s: '
               '%(reason)s')

    def __init__(self, arq_uuid, reason):
        self.arq_uuid = arq_uuid
        self.reason = reason
        super().__init__(arq_uuid=arq_uuid, reason=reason)
