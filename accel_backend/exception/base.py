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

"""The base of every accel_backend exception: an HTTP status, a stable
code and a message formatted from keyword arguments."""

from accel_backend.exception import codes


class AccelBackendError(Exception):
    """Base class.

    :param detail: human-readable message (str); if omitted, ``msg_fmt`` is
        formatted with ``kwargs``.
    :param kwargs: values for ``msg_fmt``.
    """

    status = 500
    code = codes.INTERNAL_ERROR
    msg_fmt = 'An unexpected error occurred.'

    def __init__(self, detail=None, **kwargs):
        self.kwargs = kwargs
        if detail is None:
            detail = self.msg_fmt % kwargs if kwargs else self.msg_fmt
        self.detail = detail
        super().__init__(detail)
