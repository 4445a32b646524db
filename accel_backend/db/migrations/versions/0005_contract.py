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

"""Root of the ``contract`` branch: removals and tightenings only.

This revision changes nothing: it carries the branch label (see
``0005_expand``).  It does not name the expand branch in ``depends_on``:
alembic would then keep only the contract head in its version table, and
a process could no longer read each branch's revision from it;
``accel_backend.db.migration`` refuses a contract ahead of the expand of
its release instead.

The first planned contract step: drop ``attach_handles.in_use``, which
the code now derives from the handle's ``state``
(``accel_common.handle_states``) and still writes for the processes of
the releases that read it.  The release that stops writing it first
gives the column a server default in its expand migration (the column is
NOT NULL without one, so the previous release's inserts still set it and
the new release's need not), and the drop follows in its contract
migration, once no process of the previous release is left.  Drop it
with ``op.drop_column`` (SQLite 3.35 and later drop a column in place):
``op.batch_alter_table`` would copy the table, which SQLite refuses with
foreign keys on while ``accelerator_requests`` refers to it.

Revision ID: 0005_contract
Revises: 0004
Create Date: 2026-11-25
"""

revision = '0005_contract'
down_revision = '0004'
branch_labels = ('contract',)
depends_on = None


def upgrade():
    pass


def downgrade():
    pass
