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

"""Resource logic over the database: one module per API resource.

Functions take an open SQLAlchemy session (from
``accel_backend.db.api.Database.transaction``) so callers choose the
transaction boundary; they return model rows, and ``to_dict`` helpers give
the Cyborg v2 wire view.
"""
