#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""Typed exceptions of the accelerator (Cyborg v2) client.

Every exception carries, when the failure came from an HTTP answer, the
status code (``status_code``) and the error code/message the service put in
its body (``error_code``, ``error_message``); both body styles are parsed by
the client: Cyborg's ``{"error_message": ...}`` and the OpenStack API-WG
``{"errors": [{"status", "code", "title", "detail"}]}``.

Hierarchy::

    AcceleratorClientError
     +-- AcceleratorServiceUnavailable   (connection failure, no endpoint, 5xx)
     +-- DeviceProfileNotFound
     +-- DeviceProfileAmbiguous
     +-- InvalidDeviceProfile
     +-- ARQCreateFailed
     +-- ARQNotFound
     +-- ARQBindFailed
     +-- ARQUnbindFailed
     +-- ARQDeleteFailed
     +-- ARQMatchError
"""


class AcceleratorClientError(Exception):
    """Base of every error raised by ``nova_accel.cyborg_client``.

    The message is ``msg_fmt % kwargs``; a subclass names the keyword
    arguments its ``msg_fmt`` needs. When formatting fails (a caller forgot a
    keyword) the raw format string is used rather than raising a second,
    unrelated error.

    :param message: an explicit message; overrides ``msg_fmt``.
    :param status_code: HTTP status of the failed call, or None.
    :param error_code: the service's error code from the body, or None.
    :param error_message: the service's error text from the body, or None.
    :param kwargs: values for ``msg_fmt``; kept in ``self.kwargs``.
    """

    msg_fmt = 'Accelerator service client error: %(reason)s'

    def __init__(self, message=None, status_code=None, error_code=None,
                 error_message=None, **kwargs):
        self.status_code = status_code
        self.error_code = error_code
        self.error_message = error_message
        kwargs.setdefault('reason', error_message or 'unknown error')
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError, ValueError):
                message = self.msg_fmt
        if status_code is not None and error_message:
            message = '%s (HTTP %s: %s)' % (message, status_code,
                                            error_message)
        elif status_code is not None:
            message = '%s (HTTP %s)' % (message, status_code)
        self.message = message
        super().__init__(message)


class AcceleratorServiceUnavailable(AcceleratorClientError):
    """The accelerator service could not be reached or answered 5xx."""

    msg_fmt = 'Accelerator service unavailable: %(reason)s'


class DeviceProfileNotFound(AcceleratorClientError):
    """No device profile has the requested name."""

    msg_fmt = 'Device profile %(name)s not found.'


class DeviceProfileAmbiguous(AcceleratorClientError):
    """More than one device profile matched the requested name."""

    msg_fmt = ('Expected exactly one device profile named %(name)s, '
               'got %(count)s.')


class InvalidDeviceProfile(AcceleratorClientError):
    """A device profile (or one of its groups) is malformed."""

    msg_fmt = 'Invalid device profile %(name)s: %(reason)s'

    def __init__(self, message=None, **kwargs):
        kwargs.setdefault('name', '<unnamed>')
        super().__init__(message, **kwargs)


class ARQCreateFailed(AcceleratorClientError):
    """Creating the ARQs of a device profile failed."""

    msg_fmt = ('Could not create accelerator requests for device profile '
               '%(name)s: %(reason)s')


class ARQNotFound(AcceleratorClientError):
    """The accelerator request does not exist."""

    msg_fmt = 'Accelerator request %(uuid)s not found.'


class ARQBindFailed(AcceleratorClientError):
    """The bind PATCH of one or more ARQs was refused."""

    msg_fmt = 'Binding failed for accelerator requests %(arqs)s.'


class ARQUnbindFailed(AcceleratorClientError):
    """The unbind PATCH of one or more ARQs was refused."""

    msg_fmt = 'Unbinding failed for accelerator requests %(arqs)s.'


class ARQDeleteFailed(AcceleratorClientError):
    """Deleting ARQs (by instance or by UUID) was refused."""

    msg_fmt = 'Deleting accelerator requests failed for %(target)s.'


class ARQMatchError(AcceleratorClientError):
    """An ARQ could not be matched to a request group / resource provider."""

    msg_fmt = ('Cannot match accelerator request %(arq)s to a resource '
               'provider: no provider for request group %(requester_id)s.')
