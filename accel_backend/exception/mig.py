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

"""Errors of MIG partitioning (``accel_backend.agent.mig``): a GPU
instance the partitioning rules refuse, one that does not exist, a GPU
model without a MIG profile table, and an ``nvidia-smi mig`` command
that failed or answered what we cannot read.

They reuse the generic codes (``accel.conflict``, ``accel.not_found``,
``accel.internal_error``): the engine is not reachable through the API
yet, so no new stable code is defined for it.
"""

from accel_backend.exception.base import AccelBackendError
from accel_backend.exception.resource import Conflict
from accel_backend.exception.resource import NotFound


class MigLayoutRefused(Conflict):
    """409: a GPU instance of that profile cannot be created there: its
    memory slices overlap another instance's, the start is not one the
    profile allows, the profile's count or the GPU's compute slices
    would be exceeded, or the profile is not one of the model's.

    :param gpu: the GPU (its id on the host, str or int).
    :param profile: the MIG profile's name (str, ``'3g.71gb'``).
    :param start: the first memory slice asked for (int, or ``None``
        for "any").
    :param reason: why (str).
    """
    msg_fmt = ('MIG GPU instance %(profile)s at slice %(start)s refused '
               'on GPU %(gpu)s: %(reason)s')


class MigInstanceNotFound(NotFound):
    """404: the GPU has no GPU instance of that id.

    :param gpu: the GPU (str or int).
    :param ident: the GPU instance id (int).
    """
    msg_fmt = 'GPU %(gpu)s has no MIG GPU instance %(ident)s.'


class MigModelUnknown(NotFound):
    """404: no MIG profile table is known for that GPU model (or PCI
    device id).

    :param ident: the model name or PCI id asked for (str).
    """
    msg_fmt = 'No MIG profile table is known for GPU model %(ident)s.'


class MigCommandFailed(AccelBackendError):
    """500: an ``nvidia-smi mig`` command failed or printed what the
    parser cannot read.

    :param command: the command line (str).
    :param reason: the exit status and output, or what was unreadable
        (str).
    """
    msg_fmt = '%(command)s failed: %(reason)s'
