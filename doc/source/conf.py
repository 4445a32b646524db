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
