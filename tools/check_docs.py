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

"""Check that the built documentation holds every option and policy rule.

``python -m tools.check_docs doc/build/html`` (run by ``tox -e docs``):
every option of the ``accel_backend`` and ``nova_accel`` namespaces, and
every rule of ``accel_backend``'s policy defaults, must appear in the
configuration reference; exits 1 naming what is missing.
"""

import importlib.metadata
import os
import sys


def _registered():
    names = set()
    for ep in importlib.metadata.entry_points(group='oslo.config.opts'):
        if ep.name in ('accel_backend', 'nova_accel'):
            for _group, opts in ep.load()():
                names.update(opt.dest for opt in opts)
    rules = set()
    for ep in importlib.metadata.entry_points(
            group='oslo.policy.policies'):
        if ep.name == 'accel_backend':
            rules.update(rule.name for rule in ep.load()())
    return names, rules


def main(argv=None):
    html_dir = (argv or sys.argv[1:] or ['doc/build/html'])[0]
    with open(os.path.join(html_dir, 'configuration', 'index.html')) as f:
        page = f.read()
    options, rules = _registered()
    missing = sorted(n for n in options | rules if n not in page)
    for name in missing:
        print('not in the configuration reference: %s' % name)
    print('%d options and %d policy rules checked, %d missing' % (
        len(options), len(rules), len(missing)))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
