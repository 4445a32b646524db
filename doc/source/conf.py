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

"""Sphinx configuration of the nova-accel documentation (tox -e docs)."""

project = 'nova-accel'
copyright = 'nova-accel developers'
extensions = [
    # Configuration reference from the registered options.
    'oslo_config.sphinxext',
    # Policy reference from the registered defaults.
    'oslo_policy.sphinxext',
    # The deviations document is Markdown (tools/compare_cyborg.py).
    'myst_parser',
    # API reference from accel_backend/api/openapi.yaml (OpenAPI 3.1).
    'sphinxcontrib.openapi',
]
source_suffix = {'.rst': 'restructuredtext'}
master_doc = 'index'
exclude_patterns = ['_build']
html_theme = 'alabaster'
html_theme_options = {'description': 'Accelerators in Nova without the '
                                     'whole Cyborg'}
pygments_style = 'sphinx'
