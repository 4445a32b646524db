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

"""Waiting in tests that start real processes: polling for a condition,
and running workers in threads all at once."""

import threading
import time


def wait_for(what, predicate, timeout, interval=0.05, log=None):
    """Call ``predicate()`` every ``interval`` seconds until it returns a
    true value, which is returned.

    :param what: what is awaited, for the failure message.
    :param timeout: seconds before giving up.
    :param log: a callable returning text (a service's log) added to the
        failure message, or None.
    :raises AssertionError: when ``timeout`` passes first.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError('%s: not within %ss%s' % (
                what, timeout, '\n' + log() if log else ''))
        time.sleep(interval)


def run_threads(target, args_list, timeout):
    """Run ``target(*args)`` in one thread per tuple of ``args_list``: all
    are started, then each is joined for up to ``timeout`` seconds.

    Returns ``(seconds from the first start to the last join, the
    threads)``; a thread still alive ran past ``timeout``.  Exceptions in
    the threads are not raised here: ``target`` records what it needs.
    """
    threads = [threading.Thread(target=target, args=args)
               for args in args_list]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return time.monotonic() - t0, threads
