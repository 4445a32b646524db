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

"""The logs of a failed run, kept and shown before ``down`` removes the
run directory.

A run's services log to ``<run dir>/logs/<service>.log``; the services of
the nested compute node (L1) to ``<run dir>/nested/logs/<service>.log``.
``down`` deletes the run directory, so without this a failed ``all``
(CI's demo) leaves only the client's side of the failure.
"""

import os
import shutil

#: The run directory's log directories (relative paths).
LOG_DIRS = ('logs', os.path.join('nested', 'logs'))
#: Most lines shown of a log's last error: its first ``ERROR_HEAD``
#: (what was being done) and its last (where it failed and with what).
ERROR_LINES = 40
ERROR_HEAD = 10
#: What marks a log as holding an error: oslo.log's level, a traceback.
ERROR_MARKS = (' ERROR ', 'Traceback (most recent call last)')


def keep(run_dir, dest, say):
    """Copy the run's logs to ``dest`` (replacing what a previous failed
    run left there), then print the last error of each log that has one.

    :param run_dir: the run directory (``config.Layout.run_dir``).
    :param dest: directory to copy the logs to (created).
    :param say: progress printer (``cloud.Say``).
    :returns: the paths copied (list of str, relative to ``dest``).
    """
    shutil.rmtree(dest, ignore_errors=True)
    copied = []
    for rel in LOG_DIRS:
        src = os.path.join(run_dir, rel)
        if not os.path.isdir(src):
            continue
        try:
            shutil.copytree(src, os.path.join(dest, rel))
        except OSError as e:
            # Keeping logs must not stop ``down`` nor hide the failure.
            say('could not copy all of %s: %s' % (src, e))
        copied.extend(sorted(
            os.path.join(rel, name) for name in os.listdir(src)
            if os.path.isfile(os.path.join(dest, rel, name))))
    say('the run failed: its logs are kept in %s' % dest)
    for rel in copied:
        if not rel.endswith('.log'):
            continue
        lines = last_error(os.path.join(dest, rel))
        if lines:
            print('--- the last error in %s ---' % rel)
            print(''.join(lines).rstrip('\n'))
    return copied


def last_error(path):
    """The lines of the last error in the log ``path``: its last run of
    lines with an ``ERROR_MARKS`` mark (oslo.log marks each line of a
    traceback), with the indented frames and the exception line of a
    plain Python traceback after it; at most ``ERROR_LINES`` (its first
    ``ERROR_HEAD`` and its last, a line saying how many were left out).

    :returns: list of str (empty: no error, or the log cannot be read).
    """
    try:
        with open(path, 'r', encoding='utf-8', errors='replace') as f:
            lines = f.readlines()
    except OSError:
        return []
    marked = [any(mark in line for mark in ERROR_MARKS) for line in lines]
    if not any(marked):
        return []
    end = len(marked) - marked[::-1].index(True)
    start = end - 1
    while start > 0 and marked[start - 1]:
        start -= 1
    if end < len(lines) and lines[end].startswith((' ', '\t')):
        while end < len(lines) and lines[end].startswith((' ', '\t')):
            end += 1
        end = min(end + 1, len(lines))
    block = lines[start:end]
    if len(block) <= ERROR_LINES:
        return block
    tail = ERROR_LINES - ERROR_HEAD
    return (block[:ERROR_HEAD] +
            ['[... %d lines ...]\n' % (len(block) - ERROR_LINES)] +
            block[-tail:])
