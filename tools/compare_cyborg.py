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

"""Send the same requests to upstream Cyborg 17.0.0 and to accel_backend,
and write what each answered to ``doc/cyborg-deviations.md``.

    python -m tools.compare_cyborg [--out doc/cyborg-deviations.md] [--keep]
    tox -e compare-cyborg

The services are the fixtures of ``tools.fixtures``, started as the
benchmark suite starts them (``tools.fixtures.accel_backend.start_reporting``
and ``tools.fixtures.cyborg.start_with_broker``; ``benchmarks.upstream``
says how upstream is run):
one Placement server, one Nova stub, RabbitMQ, Cyborg 17 (API under
gunicorn without keystone, conductor, agent with the fake driver, SQLite)
and an ``accel-backend`` process over two recorded GPUs (noauth).

Each case is one HTTP request, sent in the same order to both services.
Only what a service needs differs: its identity headers (Cyborg: ``X-Roles``,
``X-User-Id``, ``X-Project-Id``, ``X-Service-Roles``; accel_backend:
``X-Auth-Token: admin``), and the resource class, trait, host and resource
provider of the one device it has (Cyborg's fake driver: ``FPGA`` /
``CUSTOM_FAKE_DEVICE``; accel_backend: ``PGPU`` / ``CUSTOM_NVIDIA_T4``).
The malformed part of a bad request is byte for byte the same.

The document lists, per case, each service's status, Cyborg's error text
and accel_backend's stable error code, and flags every case where Cyborg
answers 5xx and every other status difference, with the justification
recorded in ``JUSTIFICATIONS``.  It exits non-zero when accel_backend
answers any case with a 5xx.

This module starts the services and sends the requests; the requests are
``CASES`` in ``tools.compare_cyborg_cases``, the flags, justifications and
the document's text are in ``tools.compare_cyborg_doc``.
"""

import argparse
import contextlib
import datetime
import json
import os
import shutil
import string
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

import requests

from accel_common import arq_states
from accel_common import placement_errors
from tools import compare_cyborg_cases as cases
from tools import compare_cyborg_doc as doc
from tools import fixtures as tools_fixtures
from tools.fixtures import accel_backend as accel_fx
from tools.fixtures import accel_client
from tools.fixtures import cyborg as cyborg_fx
from tools.fixtures import nova_stub
from tools.fixtures import placement as placement_fx
from tools.fixtures import rabbitmq
from tools.fixtures import sysfs as sysfs_fx
from tools.launch import cyborg as launch_cyborg
from tools import machine

DOC = os.path.join(machine.REPO, 'doc', 'cyborg-deviations.md')

CYBORG_HEADERS = {
    'X-Roles': 'admin,member,reader',
    'X-Service-Roles': 'service',
    'X-User-Id': accel_client.USER_ID,
    'X-Project-Id': accel_client.PROJECT_ID,
    'Content-Type': 'application/json',
    'Accept': 'application/json',
}
ACCEL_HEADERS = {
    'X-Auth-Token': 'admin',
    # Binding needs Nova's service token (noauth: any token).
    'X-Service-Token': 'nova',
    'Content-Type': 'application/json',
    'Accept': 'application/json',
}


# -- running ---------------------------

def _subst(obj, ctx):
    """``obj`` (str, list, dict, nested) with ``$var`` in its strings
    replaced from ``ctx``; unknown variables are left as they are."""
    if isinstance(obj, str):
        return string.Template(obj).safe_substitute(ctx)
    if isinstance(obj, list):
        return [_subst(v, ctx) for v in obj]
    if isinstance(obj, dict):
        return {_subst(k, ctx): _subst(v, ctx) for k, v in obj.items()}
    return obj


def _cyborg_error(r):
    """Cyborg (pecan/WSME) wraps a JSON document in ``error_message``."""
    try:
        j = r.json()
    except ValueError:
        return r.text.strip()[:200]
    msg = j.get('error_message') if isinstance(j, dict) else None
    if isinstance(msg, str):
        try:
            inner = json.loads(msg)
            return str(inner.get('faultstring', msg))
        except ValueError:
            return msg
    if isinstance(msg, dict):
        return str(msg.get('faultstring', msg))
    first = placement_errors.first_error(j)
    if first is not None:
        return first.get('detail') or first.get('title')
    return json.dumps(j)[:200]


def _accel_error(r):
    """``(code, detail)`` of accel_backend's error document."""
    try:
        err = placement_errors.first_error(r.json())
    except ValueError:
        err = None
    if err is None:
        return None, r.text.strip()[:200]
    return err.get('code'), err.get('detail') or err.get('title')


class Side:
    """One service under comparison: its URL, a session with its identity
    headers, and its context (``{var: value}`` substituted into cases)."""

    def __init__(self, name, url, headers, ctx):
        self.name = name
        self.url = url.rstrip('/')
        self.s = requests.Session()
        self.s.headers.update(headers)
        self.ctx = dict(ctx)

    def send(self, method, path, body, extra):
        """Send one request (60 s timeout); returns the response.

        :raises requests.RequestException: when there is no answer.
        """
        headers = {}
        if extra.get('version'):
            headers['OpenStack-API-Version'] = extra['version']
        path = _subst(path, self.ctx)
        if body is None:
            data = None
        elif isinstance(body, cases.RAW):
            data = bytes(body)
        else:
            data = json.dumps(_subst(body, self.ctx))
        return self.s.request(method, self.url + path, data=data,
                              headers=headers, timeout=60)

    def arq_state(self, arq):
        """The ARQ's state, or ``GET <status>`` when it cannot be read."""
        r = self.s.get(self.url + '/v2/accelerator_requests/' + arq,
                       timeout=60)
        if r.status_code != 200:
            return 'GET %s' % r.status_code
        return r.json().get('state')

    def wait_resolved(self, arq, timeout=30):
        """Poll the ARQ every 0.05 s for up to ``timeout`` seconds until it
        is resolved (or unreadable); returns its last state."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            state = self.arq_state(arq)
            if state in (arq_states.BOUND, arq_states.BIND_FAILED,
                         arq_states.UNBOUND, 'Deleted') or \
                    state.startswith('GET '):
                return state
            time.sleep(0.05)
        return self.arq_state(arq)


def run_case(side, case):
    """Send ``case`` (see ``tools.compare_cyborg_cases``) to ``side``.

    Returns ``{'status': int or None, 'text': str}`` plus ``'code'`` (our
    error code) and ``'state'`` (the ARQ's state afterwards) where they
    apply; never raises for a failed request.
    """
    name, kind, method, path, body, extra = case
    out = {}
    if extra.get('fresh_arq'):
        if 'fresh_dp' not in side.ctx:
            r = side.s.post(side.url + cases.DP, timeout=60, data=json.dumps(
                _subst(cases.profile('cmp-fresh'), side.ctx)))
            if r.status_code != 201:
                return {'status': None, 'text': 'could not create profile '
                        'cmp-fresh: %s %s' % (r.status_code, r.text[:200])}
            side.ctx['fresh_dp'] = 'cmp-fresh'
        r = side.s.post(side.url + cases.ARQ, timeout=60, data=json.dumps(
            {'device_profile_name': 'cmp-fresh'}))
        if r.status_code != 201:
            return {'status': None, 'text': 'could not create the ARQ of '
                    'this case: %s %s' % (r.status_code, r.text[:200])}
        side.ctx['arq_x'] = r.json()['arqs'][0]['uuid']
        side.ctx['inst'] = str(uuid.uuid4())
    try:
        r = side.send(method, path, body, extra)
    except requests.RequestException as e:
        return {'status': None, 'text': 'no answer: %s' % e}
    out['status'] = r.status_code
    if r.status_code >= 400:
        if side.name == 'cyborg':
            out['text'] = _cyborg_error(r)
        else:
            out['code'], out['text'] = _accel_error(r)
    else:
        out['text'] = ''
        try:
            j = r.json() if r.content else None
        except ValueError:
            j = None
        for var, fn in extra.get('save', {}).items():
            try:
                side.ctx[var] = fn(j)
            except Exception as e:   # noqa: BLE001 - reported in the doc
                out['text'] = 'could not read %s: %s' % (var, e)
        if extra.get('expect_state') and j:
            out['text'] = 'state %s' % j.get('state')
    if extra.get('wait_state'):
        arq = _subst(extra['wait_state'], side.ctx)
        out['state'] = side.wait_resolved(arq)
    elif extra.get('fresh_arq'):
        if r.status_code < 300:
            out['state'] = side.wait_resolved(side.ctx['arq_x'])
        else:
            out['state'] = side.arq_state(side.ctx['arq_x'])
    return out


def start_services(workdir, log, stack):
    """Placement, Nova stub, RabbitMQ, Cyborg 17 and accel-backend
    (``tools.fixtures``), stopped by ``stack`` (a
    ``contextlib.ExitStack``); returns ``(sides, versions, notes)``.
    Cyborg is left out (and the reason is in ``notes``) when it cannot be
    started."""
    notes = []
    vers = machine.versions()
    placement = tools_fixtures.start(placement_fx.PlacementServer(workdir))
    stack.callback(placement.cleanUp)
    stub = tools_fixtures.start(nova_stub.NovaStub())
    stack.callback(stub.cleanUp)
    sysfs = sysfs_fx.make_sysfs(os.path.join(workdir, 'sysfs'), 2)
    backend = accel_fx.start_reporting(workdir, placement, stub,
                                       'cmp-accel', sysfs, 2, api_workers=4)
    stack.callback(backend.cleanUp)
    ac = accel_client.AccelClient(backend.root)
    dep = sorted(ac.deployables(), key=lambda d: d['name'])[0]
    dev = ac.call('GET', '/v2/devices')[1].json()['devices'][0]['uuid']
    sides = [Side('accel_backend', backend.root, ACCEL_HEADERS, {
        'rc': 'PGPU', 'trait': 'CUSTOM_NVIDIA_T4', 'host': backend.host,
        'rp': dep['rp_uuid'], 'dep': dep['uuid'], 'dev': dev})]
    log('accel-backend up at %s' % backend.root)
    try:
        py = cyborg_fx.ensure_venv(os.path.join(workdir, 'setup.log'))
        rabbitmq.ensure_installed(os.path.join(workdir, 'setup.log'))
        vers['cyborg'] = subprocess.check_output(
            [py, '-c', 'import importlib.metadata as m; '
             'print(m.version("openstack-cyborg"))'], text=True).strip()
        try:
            vers['rabbitmq'] = subprocess.check_output(
                ['dpkg-query', '-W', '-f=${Version}', 'rabbitmq-server'],
                text=True).strip()
        except (OSError, subprocess.CalledProcessError):
            pass
        cyborg, rp = cyborg_fx.start_with_broker(workdir, py, placement,
                                                 stub, stack)
        cc = accel_client.AccelClient(cyborg.url)
        cdep = [d for d in cc.deployables() if d.get('rp_uuid') == rp][0]
        cdev = cc.call('GET', '/v2/devices')[1].json()['devices'][0]['uuid']
        sides.insert(0, Side('cyborg', cyborg.url, CYBORG_HEADERS, {
            'rc': 'FPGA', 'trait': 'CUSTOM_FAKE_DEVICE',
            'host': launch_cyborg.HOST, 'rp': rp, 'dep': cdep['uuid'],
            'dev': cdev}))
        log('cyborg up at %s' % cyborg.url)
    except Exception as e:   # noqa: BLE001 - the document says why
        notes.append('Cyborg 17 could not be started: %s' % e)
        log(traceback.format_exc())
    return sides, vers, notes


def main(argv=None):
    """The command line; returns 1 when accel_backend answered a 5xx."""
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--out', default=DOC)
    p.add_argument('--keep', action='store_true',
                   help='keep the work directory (service logs)')
    p.add_argument('--json', help='also write the raw answers here')
    args = p.parse_args(argv)
    t0 = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc)

    def log(msg):
        print('[%6.1fs] %s' % (time.monotonic() - t0, msg), file=sys.stderr,
              flush=True)

    workdir = tempfile.mkdtemp(prefix='compare-cyborg-')
    log('work directory %s' % workdir)
    try:
        with contextlib.ExitStack() as stack:
            return _compare(args, workdir, log, stack, t0, started)
    finally:
        if args.keep:
            log('kept %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def _compare(args, workdir, log, stack, t0, started):
    """Start the services (``stack`` stops them), run every case, write
    the document; returns the exit status."""
    sides, vers, notes = start_services(workdir, log, stack)
    results = []
    for case in cases.CASES:
        answers = {s.name: run_case(s, case) for s in sides}
        c = answers.get('cyborg', {})
        a = answers['accel_backend']
        flag, short = doc.classify(c, a)
        results.append((case, c, a, flag, short))
        log('%-48s cyborg %-4s ours %-4s %s' % (
            case[0][:48], c.get('status'), a.get('status'),
            '' if flag == 'same' else flag))
    elapsed = time.monotonic() - t0
    doc.write_doc(args.out, results, sides, vers, notes, started, elapsed)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump([{'case': r[0][0], 'kind': r[0][1],
                        'cyborg': r[1], 'accel_backend': r[2],
                        'flag': r[3]} for r in results], f, indent=1)
    log('wrote %s' % args.out)
    ours_5xx = [r for r in results if r[3] == 'OURS-5XX']
    unjustified = [r[0][0] for r in results
                   if r[3] in ('CYBORG-5XX', 'DIFFERS', 'STATE') and
                   r[0][0] not in doc.JUSTIFICATIONS]
    if unjustified:
        log('differences without a justification: %s' % unjustified)
    return 1 if ours_5xx else 0


if __name__ == '__main__':
    sys.exit(main())
