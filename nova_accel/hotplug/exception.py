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

"""Errors of accelerator hot-plug (:mod:`nova_accel.hotplug`).

They subclass ``nova.exception.NovaException`` so that their message is
formatted the Nova way; over RPC they reach the caller as
``oslo_messaging.RemoteError`` and :mod:`nova_accel.hotplug.rpc` turns them
back into :class:`HotplugError` with the same message.
"""

from nova import exception as nova_exception


class HotplugError(nova_exception.NovaException):
    """Base: a hot-plug or hot-unplug request failed (nothing changed,
    unless the message says a rollback step failed)."""

    msg_fmt = 'Accelerator hot-plug failed: %(reason)s'


class InstanceNotHotpluggable(HotplugError):
    """The instance is not in a state (or on a host) that allows it."""

    msg_fmt = ('Instance %(instance_uuid)s cannot have accelerators '
               'hot-plugged now: %(reason)s')


class NoAcceleratorCandidates(HotplugError):
    """Placement has no free device on the instance's host."""

    msg_fmt = ('No free accelerator for device profile %(profile)s on host '
               '%(host)s (compute node %(node)s) for instance '
               '%(instance_uuid)s.')


class AllocationUpdateFailed(HotplugError):
    """Placement refused the allocation change (after retries)."""

    msg_fmt = ('Could not update the Placement allocation of instance '
               '%(instance_uuid)s: %(reason)s')


class ProfileNotAttached(HotplugError):
    """Detach asked for a device profile the instance has not got."""

    msg_fmt = ('Instance %(instance_uuid)s has no hot-plugged accelerator '
               'of device profile %(profile)s.')


class NoServiceCredentials(HotplugError):
    """Neither a user token nor [service_user] credentials are available."""

    msg_fmt = ('No credentials to call the accelerator service: the request '
               'carries no token and [service_user] has no auth_type.')


class NoReplacementDevice(HotplugError):
    """No free, untainted device satisfies the ARQ's request group on the
    instance's host: the failed device is left under the guest."""

    msg_fmt = ('No device can replace %(rp)s (ARQ %(arq)s, device profile '
               '%(profile)s) of instance %(instance_uuid)s on host '
               '%(host)s: the device is left as it is.')


class ARQNotReplaceable(HotplugError):
    """The ARQ is not a Bound ARQ of the instance."""

    msg_fmt = ('ARQ %(arq)s cannot be replaced for instance '
               '%(instance_uuid)s: %(reason)s')
