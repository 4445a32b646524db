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

"""Work left for after the answer (``api.util.after_response``) runs when
the server closes the response body (``api.deploy``'s outermost layer)."""

import testtools
import webob

from accel_backend.api import deploy
from accel_backend.api import util


class AfterResponseTest(testtools.TestCase):

    def serve(self, app):
        """Call the wrapped ``app`` as a WSGI server does; :returns: (the
        body iterable, its bytes)."""
        environ = webob.Request.blank('/').environ
        body = deploy._AfterResponse(app)(environ, lambda *a: None)
        return body, b''.join(body)

    def test_runs_at_close_in_order(self):
        ran = []

        def app(environ, start_response):
            req = webob.Request(environ)
            util.after_response(req, lambda: ran.append('first'))
            util.after_response(req, lambda: ran.append('second'))
            return [b'answer']
        body, data = self.serve(app)
        self.assertEqual((b'answer', []), (data, ran))
        body.close()
        self.assertEqual(['first', 'second'], ran)

    def test_one_that_fails_does_not_stop_the_others(self):
        ran = []

        def fail():
            raise RuntimeError('boom')

        def app(environ, start_response):
            req = webob.Request(environ)
            util.after_response(req, fail)
            util.after_response(req, lambda: ran.append('after'))
            return [b'']
        body, _ = self.serve(app)
        body.close()
        self.assertEqual(['after'], ran)

    def test_app_that_raises_still_runs_them(self):
        ran = []

        def app(environ, start_response):
            util.after_response(webob.Request(environ),
                                lambda: ran.append('ran'))
            raise RuntimeError('app failed')
        self.assertRaises(RuntimeError, self.serve, app)
        self.assertEqual(['ran'], ran)

    def test_without_the_layer_runs_at_once(self):
        ran = []
        util.after_response(webob.Request.blank('/'),
                            lambda: ran.append('ran'))
        self.assertEqual(['ran'], ran)
