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

"""gunicorn as the fixtures and the all-in-one cloud run the OpenStack
APIs under it (Placement, Keystone, Glance, nova-api): one worker, a
thread pool (the ``gthread`` worker), loopback only.

Standard library only, like the rest of :mod:`tools.launch`.
"""

#: Seconds an idle kept-alive connection stays open (gunicorn's
#: ``--keep-alive``; its default, 2, suits a server facing the internet).
#: Here the clients are OpenStack's own, and they poll: openstacksdk waits
#: for a server to go (``openstack server delete --wait``) with a GET every
#: 2 s on one connection (openstacksdk 4.22, ``openstack/resource.py``
#: ``wait_for_delete``, ``interval=2``).  gunicorn 27's gthread worker
#: closes an expired connection when its main loop wakes, at most 1 s late
#: (``gunicorn/workers/gthread.py``, ``murder_keepalived``): with a 2 s
#: timeout the close and the client's next GET meet, and the client reads
#: "Remote end closed connection without response" (the nested CI run of
#: 2026-11-26 failed so; ``tests/functional/test_launch_gunicorn.py``
#: shows the idle connection kept).  75 s is longer than any client's polling
#: interval here (the SDK's 2 s, osc_lib's 5 s) and is nginx's default.
KEEPALIVE = 75


def argv(gunicorn, app, port, workers=1, threads=4, options=()):
    """The command line serving ``app`` on ``127.0.0.1:port``.

    :param gunicorn: path of the ``gunicorn`` program.
    :param app: gunicorn's application spec (``module:callable``, or
        ``module:factory('arg')``).
    :param port: TCP port (int).
    :param workers: worker processes (int).
    :param threads: threads per worker (int; above 1: the gthread worker).
    :param options: more gunicorn options, before the application (list
        of str).
    :returns: list of str.
    """
    return ([gunicorn, '--workers', str(workers), '--threads', str(threads),
             '--keep-alive', str(KEEPALIVE)] + list(options) +
            ['--bind', '127.0.0.1:%d' % port, app])
