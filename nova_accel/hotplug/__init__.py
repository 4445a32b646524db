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

"""Hot-add and hot-remove accelerators to a running instance.

Nova has no such operation; nova_accel adds it without touching Nova:

* :mod:`.manager`: the pipeline (device profile -> Placement candidates on
  the instance's host -> allocation grown -> ARQs created, matched, bound
  -> binding waited for -> ``<hostdev>`` hot-plugged), with rollback;
* :mod:`.replace`: a device replaced under a running instance (same host,
  same request group), each step persisted and resumable;
* :mod:`.failed_devices`: the compute node's watch that replaces the
  devices tainted ``NoExecute`` (``[nova_accel] replace_failed``);
* :mod:`.placement`: allocation candidates and consumer-generation-safe
  allocation edits;
* :mod:`.rpc`: the RPC server the compute drivers run on Nova's message
  bus and the client the ``nova-accel`` command uses;
* :mod:`nova_accel.virt.hotplug_mixins` (not here: the drivers depend on
  this package, never the reverse): driver mixins (RPC server life cycle,
  hot-plugged devices kept across hard reboot/rebuild, ARQs deleted with
  the instance);
* :mod:`.state`: hot-plugged ARQs recorded in the instance's
  system_metadata.
"""
