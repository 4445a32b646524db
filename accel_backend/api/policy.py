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

"""Policy enforcement (oslo.policy) on accel_backend's own configuration.

Each ``AccelApp`` builds one ``Enforcer`` on the service's ``ConfigOpts``
(``[oslo_policy] policy_file``, default ``policy.yaml`` beside the config
file, overrides the defaults of ``accel_backend.api.policies``); handlers call
``authorize(context, rule, target)`` (or ``context.can(...)``).
"""

import contextlib
import threading

from oslo_config import cfg
from oslo_policy import policy as oslo_policy

from accel_backend.api import policies
from accel_backend import exception


class Enforcer(oslo_policy.Enforcer):
    """oslo.policy's ``Enforcer`` whose policy files are looked at once per
    API request rather than once per rule checked.

    oslo.policy 6's ``enforce`` calls ``load_rules`` for every rule: each
    call searches the configuration directories for ``[oslo_policy]
    policy_file`` and every ``policy_dirs`` entry (``ConfigOpts.
    find_file``, about 30 ``stat`` calls when the file does not exist) and
    compares modification times.  A bind PATCH checks two or three rules,
    and that search was a large share of the CPU of one ``can()`` and of
    a whole request (the contributor guide's "Design measurements").
    Inside ``request_scope`` (the API app opens one per request) the
    files are looked at at the first rule checked and not again, so a
    request that checks none (the
    version documents) does not look at all, and a changed policy file
    still applies from the next request on, as before.
    """

    _PENDING, _LOADED = 'pending', 'loaded'

    def __init__(self, *args, **kwargs):
        self._scope = threading.local()
        super().__init__(*args, **kwargs)

    @contextlib.contextmanager
    def request_scope(self):
        """Within the block (in this thread), look at the policy files at
        the first rule checked only."""
        self._scope.state = self._PENDING
        try:
            yield
        finally:
            self._scope.state = None

    def load_rules(self, force_reload=False):
        """``oslo_policy.policy.Enforcer.load_rules``, once per
        ``request_scope`` of this thread (always with
        ``force_reload``)."""
        state = getattr(self._scope, 'state', None)
        if force_reload or state != self._LOADED:
            super().load_rules(force_reload=force_reload)
            if state == self._PENDING:
                self._scope.state = self._LOADED


def new_enforcer(conf):
    """An ``Enforcer`` with accel_backend's defaults.

    :param conf: the service's ``ConfigOpts``; oslo.policy registers its
        ``[oslo_policy]`` options on it.
    """
    enforcer = Enforcer(conf)
    enforcer.register_defaults(policies.list_rules())
    # Load now: the first requests of a threaded server must not race on
    # the lazy load.
    enforcer.load_rules()
    return enforcer


def get_enforcer():
    """``oslo.policy.enforcer`` entry point for the oslopolicy-* tools:
    an enforcer on a fresh configuration (found the usual oslo.config way
    for project ``accel-backend``)."""
    conf = cfg.ConfigOpts()
    conf([], project='accel-backend')
    return new_enforcer(conf)


def target(project_id=None, user_id=None, **extra):
    """A policy target; an unknown owner never matches a caller.

    oslo.policy compares ``str()`` of values, so an owner of ``None``
    would match a caller whose project is ``None`` (noauth without
    ``X-Project-Id``, unscoped tokens); it is replaced by ``''`` here.
    """
    values = {'project_id': project_id or '', 'user_id': user_id or ''}
    values.update(extra)
    return values


def authorize(context, rule, target_=None, fatal=True):
    """Check ``rule`` for ``context`` against ``target_``.

    :param context: ``accel_backend.api.context.RequestContext`` whose
        ``enforcer`` is set.
    :param rule: a registered rule name (``accelerator:<resource>:<op>``);
        an unregistered one raises ``oslo_policy.policy.PolicyNotRegistered``
        (a bug, answered 500).
    :param target_: dict from ``target()``; default: the caller's project.
    :param fatal: raise when denied (else return False).
    :raises Forbidden: denied and ``fatal``.
    :returns: True when allowed.
    """
    if target_ is None:
        target_ = target(context.project_id, context.user_id)
    allowed = context.enforcer.authorize(
        rule, target_, context.to_policy_values(), do_raise=False)
    if not allowed and fatal:
        raise exception.Forbidden(action=rule)
    return bool(allowed)
