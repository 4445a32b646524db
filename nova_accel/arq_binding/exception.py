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

"""Errors of Nova's side of ARQ binding (:mod:`nova_accel.arq_binding`).

Both subclass :class:`nova.exception.NovaException`, so when one escapes
from a compute driver during a build Nova's compute manager records it as
the instance fault with its formatted message (and aborts the build,
deleting the instance's accelerator requests, exactly as it does for its own
binding errors).
"""

from nova import exception as nova_exception


def _join(uuids):
    """Render an iterable of ARQ UUIDs as a comma-separated string."""
    if uuids is None:
        return ''
    if isinstance(uuids, str):
        return uuids
    return ', '.join(str(u) for u in uuids)


class ARQBindingTimeout(nova_exception.NovaException):
    """The accelerator requests of an instance were not bound in time.

    Raised by :func:`nova_accel.arq_binding.waiter.wait_for_bound_arqs` when no
    ``accelerator-request-bound`` event arrived for every ARQ within
    ``timeout`` seconds (Nova's ``[DEFAULT] arq_binding_timeout``).

    :param instance_uuid: UUID (str) of the instance being built.
    :param arq_uuids: list of ARQ UUIDs (str) that were waited for.
    :param timeout: the time waited, in seconds (int or float).
    """

    msg_fmt = ('Accelerator requests %(arq_uuids_str)s of instance '
               '%(instance_uuid)s were not bound within %(timeout)s seconds '
               '([DEFAULT] arq_binding_timeout).')

    def __init__(self, instance_uuid, arq_uuids, timeout):
        self.instance_uuid = instance_uuid
        self.arq_uuids = list(arq_uuids or [])
        self.timeout = timeout
        super().__init__(instance_uuid=instance_uuid,
                         arq_uuids_str=_join(self.arq_uuids),
                         timeout=timeout)


class ARQBindingFailed(nova_exception.NovaException):
    """Binding of one or more accelerator requests failed.

    Raised when an ``accelerator-request-bound`` event arrives with status
    ``failed``, when an ARQ of the instance is in state ``BindFailed``, or
    when an ARQ waited for is missing or not ``Bound`` after every event
    arrived.

    :param instance_uuid: UUID (str) of the instance being built.
    :param arq_uuids: list of the failed ARQ UUIDs (str).
    :param reason: optional human-readable detail (str).
    """

    msg_fmt = ('Binding of accelerator requests %(arq_uuids_str)s of '
               'instance %(instance_uuid)s failed%(reason_str)s.')

    def __init__(self, instance_uuid, arq_uuids, reason=None):
        self.instance_uuid = instance_uuid
        self.arq_uuids = list(arq_uuids or [])
        self.reason = reason
        super().__init__(instance_uuid=instance_uuid,
                         arq_uuids_str=_join(self.arq_uuids),
                         reason_str=(': %s' % reason) if reason else '')
