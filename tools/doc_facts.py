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

"""What the code says about itself, for ``tools.check_docs``: the console
scripts and their subcommands, the registered options (ours, the
libraries', Nova's where installed), our ports, role names, metric names
and extras, gathered once in ``Facts``."""

import configparser
import importlib.metadata
import os
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))

#: ``oslo.config.opts`` namespaces not read, with why (test suites'
#: namespaces, ``*.tests.*``, are not read either).
OTHER_NAMESPACES = {
    'keystone': "another service's own configuration file",
    'placement.conf': "another service's own configuration file",
    'manilaclient.config': "another service's client",
    'oslo.service.wsgi': "eventlet's WSGI server: it refuses to load in "
                         "the native threading mode accel_backend runs in "
                         "(accel_backend.cmd), and no accel_backend process "
                         "uses it",
}


class _ParserRecorder:
    """Stands in for an ``argparse.ArgumentParser`` given to a program's
    parser handler, and keeps what the handler declares (argparse offers
    no public walk of a built parser): ``tree`` is ``{'commands': {name:
    tree}, 'flags': set of option strings}``."""

    def __init__(self):
        self.tree = {'commands': {}, 'flags': set()}

    def add_argument(self, *names, **kwargs):
        self.tree['flags'].update(n for n in names if n.startswith('-'))

    def add_subparsers(self, **kwargs):
        return self

    def add_parser(self, name, **kwargs):
        sub = _ParserRecorder()
        self.tree['commands'][name] = sub.tree
        return sub

    def set_defaults(self, **kwargs):
        pass


def _tree_of(handler):
    recorder = _ParserRecorder()
    handler(recorder)
    return recorder.tree


class _Recorder:
    """Takes the command-line option a library registers (public way to
    reach the parser handler oslo.upgradecheck builds)."""

    def register_cli_opt(self, opt):
        self.opt = opt


def command_trees():
    """``{script: tree}`` (see ``doc_claims.walk``) of the programs with
    subcommands."""
    from accel_backend.cmd import manage
    from accel_backend.cmd import status as status_mod
    from nova_accel.cmd import hotplug
    from oslo_upgradecheck import upgradecheck
    status = _Recorder()
    upgradecheck.register_cli_options(status, status_mod.Checks(None))
    return {'accel-backend-manage': _tree_of(manage.add_commands),
            'accel-backend-status': _tree_of(status.opt.handler),
            'nova-accel': _tree_of(hotplug.command_opt.handler)}


def console_scripts():
    """:returns: set of the ``nova-accel`` distribution's scripts."""
    return {ep.name for ep in importlib.metadata.distribution(
        'nova-accel').entry_points if ep.group == 'console_scripts'}


def openstack_commands():
    """:returns: ``(commands, families)``: the set of tuples of words of
    the installed ``openstack`` commands (entry point
    ``accelerator_device_list``: ``('accelerator', 'device', 'list')``),
    and the set of first words that a distribution other than
    ``nova-accel`` serves (the client, python-cyborgclient, that the
    bundle's own plugin commands join)."""
    commands, families = set(), set()
    for dist in importlib.metadata.distributions():
        ours = dist.metadata['Name'] == 'nova-accel'
        for ep in dist.entry_points:
            # openstack.cli*: the client's own hooks and plugin modules.
            if (ep.group.startswith('openstack.') and
                    not ep.group.startswith('openstack.cli')):
                words = tuple(ep.name.split('_'))
                commands.add(words)
                if not ours:
                    families.add(words[0])
    return commands, families


def known_options():
    """:returns: ``({group: set of option names}, [namespaces not
    loaded, with why], set of namespaces loaded)``; ``DEFAULT`` for
    options without a group."""
    from accel_backend.conf import discovery
    groups, failed, seen = {}, [], set()
    for ep in importlib.metadata.entry_points(group='oslo.config.opts'):
        if (ep.name in seen or ep.name in OTHER_NAMESPACES or
                '.tests.' in ep.name):
            continue
        seen.add(ep.name)
        try:
            listed = list(ep.load()())
        except Exception as e:
            failed.append('%s (%s: %s)' % (ep.name, type(e).__name__, e))
            continue
        for group, opts in listed:
            name = getattr(group, 'name', group) or 'DEFAULT'
            groups.setdefault(name, set()).update(
                n for opt in opts for n in (opt.name, opt.dest))
    groups.setdefault(discovery.mdev_type_group('<type>'), set()).update(
        opt.name for opt in discovery.MDEV_TYPE_OPTS)
    return groups, failed, seen - {f.split(' ')[0] for f in failed}


def our_ports():
    """:returns: ``{'[api] port': {6666}, '[metrics] port': {...}}``: the
    defaults as registered; an option without a default takes the
    defaults of its group per role where the code has such a table
    (``accel_backend.conf.metrics.PORTS``)."""
    from accel_backend import conf
    ports = {}
    for group, opts in conf.list_opts():
        for opt in opts:
            if opt.name == 'port' and hasattr(group, 'name'):
                per_role = getattr(conf, group.name.upper() + '_PORTS', {})
                ports['[%s] port' % group.name] = (
                    {opt.default} if opt.default is not None
                    else set(per_role.values()))
    return ports


def metric_names():
    """:returns: set of the sample names the collectors of
    ``accel_backend.metrics`` expose (``_total`` of counters, ``_bucket``,
    ``_count``, ``_sum`` of histograms...), the database gauges read from
    an empty SQLite database made for this."""
    from accel_backend.db import api as db_api
    from accel_backend import metrics
    families = list(metrics.REGISTRY.collect())
    with tempfile.TemporaryDirectory() as tmp:
        db = db_api.Database('sqlite:///%s/metrics.sqlite' % tmp)
        try:
            db.sync()
            families += list(metrics.DatabaseCollector(db).collect())
        finally:
            db.dispose()
    suffixes = {'counter': ('_total', '_created'),
                'histogram': ('', '_bucket', '_count', '_sum', '_created'),
                'summary': ('', '_count', '_sum', '_created')}
    return {f.name + s for f in families
            for s in suffixes.get(f.type, ('',))}


def extras():
    """:returns: set of the ``nova-accel`` extras (``pip install
    'nova-accel[postgresql]'``), from setup.cfg and the installed
    metadata: a guide's ``[postgresql]`` may name one."""
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'setup.cfg'))
    names = set(cfg['options.extras_require']) if cfg.has_section(
        'options.extras_require') else set()
    try:
        names.update(importlib.metadata.metadata('nova-accel').get_all(
            'Provides-Extra') or ())
    except importlib.metadata.PackageNotFoundError:
        pass
    return names


def _other_accel_names():
    names = {'accel_backend', 'accel_common'}
    names.update(ep.name for ep in importlib.metadata.entry_points(
        group='oslo.middleware.healthcheck'))
    return names


class Facts:
    """What the code says, gathered once (see the module)."""

    def __init__(self):
        # First: it chooses oslo.service's threading backend, which the
        # imports below would otherwise leave at eventlet.
        from accel_backend import cmd  # noqa: F401
        from accel_backend import service
        self.scripts = console_scripts()
        self.trees = command_trees()
        self.openstack, self.openstack_families = (
            openstack_commands())
        self.options, self.failed_namespaces, loaded = known_options()
        # Without Nova (tox -e docs), what is not ours may be Nova's.
        self.nova_missing = 'nova.conf' not in loaded
        self.our_groups = {
            getattr(group, 'name', group) or 'DEFAULT'
            for ep in importlib.metadata.entry_points(group='oslo.config.opts')
            if ep.name in ('accel_backend', 'nova_accel')
            for group, _opts in ep.load()()} - {'DEFAULT'}
        self.ports = our_ports()
        self.roles = frozenset(service.ROLES)
        self.metrics = metric_names()
        self.extras = extras()
        self.other_accel = _other_accel_names()
