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

"""The PNG plots of a benchmark run (matplotlib, Agg backend): one per
measure that was measured, written next to the results file."""

import os

import matplotlib

from benchmarks import common
from benchmarks import upstream

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402


def _save(fig, path):
    """Lay ``fig`` out, write it to ``path`` (PNG, 100 dpi) and close it."""
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _loglog(ax, xlabel, ylabel, title):
    """Log scales on both axes, the labels, the title and a small legend."""
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)


def _plot_boot(b, path):
    keys = [k for k in ('accel_backend', 'nova_fake', 'no_accelerator',
                        'no_accelerator_fake_harness') if k in b]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.boxplot([b[k]['samples_ms'] for k in keys], showmeans=False)
    ax.set_xticks(range(1, len(keys) + 1))
    ax.set_xticklabels(['a: accel_backend', 'b: Nova fake',
                        'c: no accelerator', 'c\': no accel.\n(fake harness)'
                        ][:len(keys)], fontsize=8)
    ax.set_ylabel('POST /servers -> ACTIVE (ms)')
    ax.set_title('Boot in Nova 34 functional harness')
    _save(fig, path)


def _plot_roundtrip(rt, path):
    fig, ax = plt.subplots(figsize=(7, 4))
    for db, style, color in (('sqlite', 'o-', 'C0'),
                             ('postgresql', 's--', 'C2')):
        r = rt.get(db)
        if not r or common.not_measured(r):
            continue
        ns = sorted(r['sizes'], key=int)
        for pct, alpha in (('p50', 1.0), ('p99', 0.45)):
            ax.plot([int(n) for n in ns], [r['sizes'][n][pct] for n in ns],
                    style, alpha=alpha, color=color,
                    label='%s %s' % (db, pct))
        ax.plot([int(n) for n in ns],
                [r['patch_to_event'][n]['p50'] for n in ns], 'x-.',
                alpha=0.7, color=color,
                label='%s PATCH->event p50' % db)
        # Not ``path``: that is where the figure goes (it once was
        # overwritten here, and the plot landed in ./patch_to_event.png).
        for measured, ls in (('create_bind_event', ':'),
                             ('patch_to_event', '-.')):
            fl = r['floors'][measured]
            if fl['ms']:
                ax.axhline(fl['ms'], linestyle=ls, alpha=0.8, color=color,
                           label='%s floor %s (%d HTTP + %d commits)' % (
                               db, measured, fl['http'], fl['commits']))
    _loglog(ax, 'ARQs created and bound at once',
            'until the last event arrived (ms)',
            'ARQ round trip, accel-backend over loopback')
    _save(fig, path)


def _plot_upstream(up, path):
    ops = [op for op in upstream.OPS
           if op in up['accel_backend'] and op in up['cyborg']]
    fig, ax = plt.subplots(figsize=(8, 4))
    x = range(len(ops))
    ax.bar([i - 0.2 for i in x], [up['accel_backend'][o]['p50'] for o in ops],
           width=0.4, label='accel_backend')
    ax.bar([i + 0.2 for i in x], [up['cyborg'][o]['p50'] for o in ops],
           width=0.4, label='Cyborg 17.0.0')
    ax.set_xticks(list(x))
    ax.set_xticklabels([o.replace('_', '\n') + (
        '\n(202 here,\nsync in Cyborg)' if o in upstream.BARE else '')
        for o in ops], fontsize=7)
    ax.set_ylabel('p50 (ms)')
    ax.set_title('Same client, same run: accel_backend vs Cyborg 17')
    ax.legend()
    _save(fig, path)


def _plot_scale(db, path):
    ns = sorted(db['steps'], key=int)
    fig, ax = plt.subplots(figsize=(7, 4))
    for op in ('arq_list_by_instance', 'device_list_by_host',
               'device_profile_by_name', 'device_profile_by_uuid',
               'arq_list_all'):
        ax.plot([int(n) for n in ns], [db['steps'][n][op]['p50'] for n in ns],
                'o-', label=op)
    _loglog(ax, 'ARQs in the database (%d nodes x 8 devices)' % db['hosts'],
            'p50 over HTTP (ms)', 'accel_backend at scale')
    _save(fig, path)


def _plot_concurrency(results, path):
    fig, ax = plt.subplots(figsize=(7, 4))
    title = None
    for db, c in ((d, results[d]) for d in common.DATABASES if d in results):
        if common.not_measured(c):
            continue
        ax.hist(c['patch_latency']['samples_ms'], bins=30, alpha=0.6,
                label=db)
        title = '%d concurrent binds, %d devices' % (c['binds'],
                                                     c['devices'])
    ax.set_xlabel('PATCH latency under contention (ms)')
    ax.set_ylabel('requests')
    ax.set_title(title or '')
    ax.legend()
    _save(fig, path)


def _plot_sched(s, path):
    """p50 of allocation candidates against GPUs per request, one line
    per layout and cloud size; a timeout drawn at the timeout."""
    fig, ax = plt.subplots(figsize=(7, 4))
    styles = ('o-', 's--', '^:')
    for i, size in enumerate(s['sizes']):
        for j, (lay, by_n) in enumerate(size['layouts'].items()):
            pts = sorted((int(n), c.get('p50') or (
                s['timeout_s'] * 1000.0 if c.get('status') == 'timeout'
                else None)) for n, c in by_n.items())
            pts = [(n, v) for n, v in pts if v]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts],
                        styles[i % 3], color='C%d' % j,
                        label='%s, %d hosts' % (lay, size['hosts']))
    ax.axhline(s['timeout_s'] * 1000.0, color='grey', linestyle=':',
               label='timeout')
    _loglog(ax, 'GPUs per request (8 per host)',
            'GET /allocation_candidates p50 (ms)',
            'Scheduling cost: per-device vs pooled providers')
    ax.minorticks_off()
    ax.set_xticks([1, 2, 4, 8])
    ax.set_xticklabels(['1', '2', '4', '8'])
    _save(fig, path)


def plots(results, prefix):
    """Write one PNG per measured measure as ``<prefix>-<measure>.png``.

    :param results: ``{measure: result dict}`` as ``benchmarks.run``
        collects them; measures not measured are skipped.
    :param prefix: the path of the results file without its ending.
    :returns: ``{measure: file name}`` (without its folder).
    :raises OSError: when a file cannot be written.
    """
    out = {}
    todo = [('boot', lambda r: r, _plot_boot),
            ('roundtrip', lambda r: r, _plot_roundtrip),
            ('upstream', lambda r: r, _plot_upstream),
            ('concurrency', lambda r: r, _plot_concurrency),
            ('scale', lambda r: r['db'], _plot_scale),
            ('sched', lambda r: r, _plot_sched)]
    for name, pick, fn in todo:
        r = results.get(name)
        if not r or common.not_measured(r):
            continue
        data = pick(r)
        if common.not_measured(data):
            continue
        path = '%s-%s.png' % (prefix, name)
        fn(data, path)
        out[name] = os.path.basename(path)
    return out
