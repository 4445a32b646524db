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

"""Check the documentation against the code.

``python -m tools.check_docs [doc/build/html] [--rst FILE ...]`` (run by
``tox -e docs`` after the Sphinx build; ``tests/unit/test_check_docs.py``
runs the RST part without a build):

* with the HTML directory: every option of the ``accel_backend`` and
  ``nova_accel`` namespaces, and every rule of ``accel_backend``'s policy
  defaults, appears in the built configuration reference;
* always: what the install and admin guides (their RST sources, or the
  ``--rst`` files) name in literal text exists in the code
  (``tools.doc_claims`` reads it):

  - commands: our console scripts (the ``nova-accel`` distribution's entry
    points), the subcommands and flags of ``accel-backend-manage``,
    ``accel-backend-status`` and ``nova-accel`` (walked in the parsers the
    programs build), and ``openstack ...`` commands (the installed
    ``openstack.*`` entry points of python-openstackclient and its
    plugins; not checked, and said so, where none is installed);
  - options: each ``[group] name`` (and each ``ini`` block's sections and
    keys) is registered in a namespace of ours or of a library
    (``oslo.config.opts`` entry points; other services' own namespaces
    excepted, Nova's kept for ``nova.conf``), or in a group ours register
    at run time (``[mdev_<type>]``);
  - ports: a port stated is the default of the option it describes
    (``[metrics] port`` where the text is about metrics, else ``[api]
    port``), or a listed port of another service;
  - roles: a ``<name> role`` that is not a Keystone role is one of
    ``accel_backend.service.ROLES``;
  - metrics: an ``accel_*`` name is a sample name exposed by the
    collectors of ``accel_backend.metrics`` (or a health check backend,
    or one of our packages).

Exit status 1 naming each finding (``path:line: kind claim: why``);
``TEMPORARY_ALLOWED`` findings are printed but do not fail.
"""

import argparse
import importlib.metadata
import os
import sys

from tools import doc_claims
from tools import doc_facts

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
GUIDES = ('doc/source/install/index.rst', 'doc/source/admin/index.rst')

#: Ports of other services the guides may state, with whose they are.
OTHER_PORTS = {5672: 'RabbitMQ (AMQP)'}
#: Keystone roles the guides name (``the service role``), and words that
#: precede "role" without naming one.
KEYSTONE_ROLES = frozenset(('service', 'admin', 'member', 'reader',
                            'manager'))
NOT_ROLE_NAMES = frozenset(('same', 'this', 'that', 'the', 'a', 'its',
                            'each', 'every', 'one', 'own', 'their'))

#: ``(guide, kind, claim): reason``: findings in parts of the guides that
#: are being rewritten elsewhere; printed, not failing.  Temporary: each
#: entry goes when its part is fixed.
TEMPORARY_ALLOWED = {}


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


def check_html(html_dir):
    """:returns: list of names missing from the configuration reference
    built in ``html_dir``."""
    with open(os.path.join(html_dir, 'configuration', 'index.html')) as f:
        page = f.read()
    options, rules = _registered()
    return sorted(n for n in options | rules if n not in page)


def _check_commands(lit, facts, out, skipped):
    for command in doc_claims.console_commands(lit):
        for script, words in doc_claims.script_uses(command):
            if script not in facts.scripts:
                out.append(('command', script, 'no console script of that '
                            'name (%s)' % ', '.join(sorted(facts.scripts))))
                continue
            for problem in doc_claims.walk(
                    facts.trees.get(script, {'commands': {}, 'flags': set(
                        doc_claims.GLOBAL_OPTIONS) | {'-h', '--help'}}),
                    words):
                out.append(('command', ' '.join([script] + words),
                            problem))
        for words in doc_claims.openstack_uses(command):
            if any(tuple(words[:k]) in facts.openstack
                   for k in range(1, len(words) + 1)):
                continue
            # Only the bundle's own plugin commands of this family are
            # installed (no client): the others cannot be told apart.
            if words[0] not in facts.openstack_families:
                skipped.add('openstack %s commands: the client that serves '
                            'them is not installed (nova-accel\'s own '
                            'plugin commands were checked)' % words[0])
                continue
            out.append(('command', 'openstack ' + ' '.join(words),
                        'no such openstack command installed'))


def _check_options(lit, facts, out, skipped):
    for line, group, name in doc_claims.option_refs(lit):
        claim = '[%s]%s' % (group, ' ' + name if name else '')
        if not name and group in facts.extras:
            continue
        known = group in facts.options and (
            not name or name in facts.options[group])
        if not known and facts.nova_missing and \
                group not in facts.our_groups:
            skipped.add('options that may be Nova\'s (%s): the nova.conf '
                        'namespace is not installed' % claim)
            continue
        if group not in facts.options:
            out.append((line, 'option', claim, 'no such group'))
        elif name and name not in facts.options[group]:
            out.append((line, 'option', claim,
                        'no option %r in group %s' % (name, group)))


def _check_ports(lit, facts, out):
    about_metrics = 'metrics' in (lit.text + lit.context).lower()
    for port, section in doc_claims.ports(lit):
        if port in OTHER_PORTS:
            continue
        if section is not None:   # an ini block: the section says
            about_metrics = section == 'metrics'
        opt = '[metrics] port' if about_metrics else '[api] port'
        if port not in facts.ports[opt]:
            out.append(('port', str(port), '%s defaults to %s' % (
                opt, ' or '.join(map(str, sorted(facts.ports[opt]))))))


def _check_metrics(lit, facts, out):
    for name in doc_claims.accel_names(lit):
        if name not in facts.metrics and name not in facts.other_accel:
            out.append(('metric', name, 'no such sample name in '
                        'accel_backend.metrics'))


def check_rst(text, facts):
    """Check one RST file's text against ``facts`` (``Facts``).

    :returns: ``(findings, skipped)``: list of ``(line, kind, claim,
        why)`` and set of str (claims not checkable here, with why).
    """
    findings, skipped = [], set()
    doc = doc_claims.Text(text)
    for lit in doc.literals():
        out = []
        _check_commands(lit, facts, out, skipped)
        _check_ports(lit, facts, out)
        _check_metrics(lit, facts, out)
        findings += [(lit.line,) + f for f in out]
        _check_options(lit, facts, findings, skipped)
    for line, text_line in doc.prose():
        for word in doc_claims.role_names(text_line):
            w = word.lower()
            if (w not in facts.roles and w not in KEYSTONE_ROLES and
                    w not in NOT_ROLE_NAMES):
                findings.append((line, 'role', word, 'not a role of '
                                 'accel_backend.service (%s) nor a Keystone '
                                 'role' % ', '.join(sorted(facts.roles))))
    if facts.failed_namespaces:
        skipped.add('options of namespaces that did not load: %s' %
                    '; '.join(facts.failed_namespaces))
    return sorted(set(findings)), skipped


def check_guides(paths=GUIDES, facts=None):
    """:returns: ``(failing, allowed, skipped)``: lists of
    ``'path:line: kind claim: why'`` and a set of str."""
    facts = facts or doc_facts.Facts()
    failing, allowed, skipped = [], [], set()
    for path in paths:
        with open(os.path.join(ROOT, path)) as f:
            findings, missed = check_rst(f.read(), facts)
        skipped |= missed
        for line, kind, claim, why in findings:
            text = '%s:%d: %s %s: %s' % (path, line, kind, claim, why)
            reason = TEMPORARY_ALLOWED.get((path, kind, claim))
            if reason:
                allowed.append('%s (allowed for now: %s)' % (text, reason))
            else:
                failing.append(text)
    return failing, allowed, skipped


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tools.check_docs')
    parser.add_argument('html_dir', nargs='?',
                        help='built HTML (doc/build/html) to check the '
                             'configuration reference of')
    parser.add_argument('--rst', nargs='+', default=list(GUIDES),
                        help='RST files to check the claims of (default: '
                             'the install and admin guides)')
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    status = 0
    if args.html_dir:
        missing = check_html(args.html_dir)
        for name in missing:
            print('not in the configuration reference: %s' % name)
        status = 1 if missing else 0
    failing, allowed, skipped = check_guides(args.rst)
    for line in failing + allowed:
        print(line)
    for line in sorted(skipped):
        print('not checked: %s' % line)
    print('%d files: %d false claims, %d allowed for now' % (
        len(args.rst), len(failing), len(allowed)))
    return 1 if failing else status


if __name__ == '__main__':
    sys.exit(main())
