"""Typed exceptions raised by the ``nova_accel.virt`` package.

All of them subclass :class:`nova.exception.NovaException`, so when one
escapes from a compute driver during a build Nova's compute manager records
it as the instance fault with its formatted message (and aborts the build,
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

    Raised by :func:`nova_accel.virt.binding.wait_for_bound_arqs` when no
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
