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

"""Root of the ``expand`` branch: additive changes only.

From this release on, every migration belongs to one of two branches
that start at revision 0004 (``accel_backend.db.migration`` says why and
how they are applied):

``expand`` (revisions ``NNNN_expand``)
    new tables, new nullable (or server-defaulted) columns, new indexes:
    the processes of the previous release keep working on the result, so
    ``accel-backend-manage db expand`` runs before any process is
    upgraded.
``contract`` (revisions ``NNNN_contract``)
    drops, renames, NOT NULL and other tightenings of what the previous
    release still used: ``accel-backend-manage db contract`` runs once no
    process of the previous release is left.

This revision changes nothing: it carries the branch label.

Revision ID: 0005_expand
Revises: 0004
Create Date: 2026-11-25
"""

revision = '0005_expand'
down_revision = '0004'
branch_labels = ('expand',)
depends_on = None


def upgrade():
    pass


def downgrade():
    pass
