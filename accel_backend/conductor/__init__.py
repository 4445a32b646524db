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

"""The conductor: binding, events to Nova, the audits, and the database
work of the agents, done for them (``accel-backend-conductor``).

``binder`` claims attach handles for ``BindStarted`` ARQs (``claim``,
``numa_fit``, ``failure``) and commits the outcome with a pending event
that ``delivery`` sends to Nova (``nova_notifier``); ``dispatcher``
hands a bind PATCH to the binder of this process or to a conductor.
``audit``, ``audit_handles`` and ``audit_hosts`` repair what a crash
left behind (``nova_orphans`` finds ARQs of deleted servers).
``store``: ``HostStore``, the rows of one host, with ``host_sync`` and
``pool_migration``; ``rpc``: the conductor RPC API it serves, ``rpcapi``:
its client and ``RemoteHostStore``, the agents' side of it;
``payloads``: the versioned payloads it carries.  See
``accel_backend.service`` for which process runs which part.
"""
