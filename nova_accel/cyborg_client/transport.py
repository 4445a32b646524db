#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""HTTP transport of the accelerator (Cyborg v2) client.

What every call of :class:`nova_accel.cyborg_client.client.AcceleratorClient`
goes through, whatever the resource: the process-wide keystoneauth session
and the adapters built over it from Nova's ``[cyborg]`` options (registered
by nova, ``nova/conf/cyborg.py``, 34.0.0), sending one request and turning
transport failures and 5xx answers into typed exceptions of
:mod:`nova_accel.cyborg_client.exception`, and reading the error code and
message out of an error body in any of the styles OpenStack services use.
Nothing here retries: the retries there are come from the adapter
options ``connect_retries`` and ``status_code_retries`` of ``[cyborg]``
(keystoneauth1, ``keystoneauth1/loading/adapter.py``, 5.18.1), applied by
keystoneauth to every request.
"""

import threading

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging
from oslo_serialization import jsonutils

from accel_common import placement_errors
from nova_accel.cyborg_client import exception

LOG = logging.getLogger(__name__)

#: Nova's option group of the accelerator service's keystoneauth options.
CONF_GROUP = 'cyborg'

_SESSION = None
_SESSION_LOCK = threading.Lock()

_UNAVAILABLE_EXC = (ks_exc.ConnectionError, ks_exc.EndpointNotFound,
                    ks_exc.DiscoveryFailure)


def conf_session():
    """Return the process-wide keystoneauth session built from Nova's
    ``[cyborg]`` options (TLS, timeouts in seconds), created on first use;
    every accelerator client of the process shares it (and its connection
    pool), whatever auth it sends.

    :returns: ``keystoneauth1.session.Session``.
    """
    global _SESSION
    with _SESSION_LOCK:
        if _SESSION is None:
            import nova.conf
            _SESSION = ks_loading.load_session_from_conf_options(
                nova.conf.CONF, CONF_GROUP)
        return _SESSION


def conf_adapter(auth):
    """Return an adapter sending ``auth`` over :func:`conf_session`, its
    endpoint found through Nova's ``[cyborg]`` options (``service_type``
    defaults to ``accelerator``; ``endpoint_override``, ``region_name``
    etc. are honoured).  Nothing is contacted until the first request.

    :param auth: a keystoneauth1 auth plugin.
    :returns: ``keystoneauth1.adapter.Adapter``.
    """
    import nova.conf

    return ks_loading.load_adapter_from_conf_options(
        nova.conf.CONF, CONF_GROUP, session=conf_session(), auth=auth)


def error_details(resp):
    """Extract ``(error_code, error_message)`` from an error response.

    Understands Cyborg's ``{"error_message": ...}`` (a string, a JSON
    string holding ``faultcode``/``faultstring``, or a dict), the OpenStack
    API-WG ``{"errors": [{"status", "code", "title", "detail"}]}`` and the
    legacy ``{"<fault>": {"message", "code"}}``; otherwise the body text
    (at most 512 characters).

    :param resp: a ``requests.Response``.
    :returns: tuple of (str or None, str or None).
    """
    text = (resp.text or '').strip()
    try:
        body = resp.json()
    except ValueError:
        return None, text[:512] or None
    if not isinstance(body, dict):
        return None, text[:512] or None
    first = placement_errors.first_error(body)
    if first is not None:
        return (first.get('code'),
                first.get('detail') or first.get('title') or text[:512])
    if 'error_message' in body:
        err = body['error_message']
        if isinstance(err, str):
            try:
                err = jsonutils.loads(err)
            except ValueError:
                return None, err
        if isinstance(err, dict):
            return (err.get('faultcode') or err.get('code'),
                    err.get('faultstring') or err.get('message') or
                    jsonutils.dumps(err))
        return None, str(err)
    if len(body) == 1:
        key, value = next(iter(body.items()))
        if isinstance(value, dict) and 'message' in value:
            return key, value['message']
    return None, text[:512] or None


def request(adapter, method, path, **kwargs):
    """Send one request; translate transport failures and 5xx.

    :param adapter: ``keystoneauth1.adapter.Adapter`` of the service's
        ``/v2`` root.
    :param method: HTTP method (str, ``GET``...).
    :param path: path relative to the adapter's endpoint (str).
    :param kwargs: passed to ``Adapter.request`` (``json``, ``params``,
        ``headers``).
    :returns: ``requests.Response`` with a status below 500.
    :raises: AcceleratorServiceUnavailable (connection failure, no
        endpoint, 5xx), AcceleratorClientError (other keystoneauth
        failures, e.g. missing auth).
    """
    try:
        resp = adapter.request(path, method, raise_exc=False, **kwargs)
    except _UNAVAILABLE_EXC as exc:
        LOG.warning('Accelerator service unreachable (%(method)s '
                    '%(path)s): %(exc)s',
                    {'method': method, 'path': path, 'exc': exc})
        raise exception.AcceleratorServiceUnavailable(reason=str(exc))
    except ks_exc.ClientException as exc:
        raise exception.AcceleratorClientError(
            reason='%s %s failed: %s' % (method, path, exc))
    if resp.status_code >= 500:
        code, message = error_details(resp)
        LOG.warning('Accelerator service answered %(status)s to '
                    '%(method)s %(path)s: %(msg)s',
                    {'status': resp.status_code, 'method': method,
                     'path': path, 'msg': message})
        raise exception.AcceleratorServiceUnavailable(
            reason='%s %s' % (method, path),
            status_code=resp.status_code, error_code=code,
            error_message=message)
    return resp


def failure(resp, exc_cls, **kwargs):
    """Build (not raise) ``exc_cls`` carrying the response's status and
    the error code and message of its body (:func:`error_details`).

    :param resp: a ``requests.Response``.
    :param exc_cls: a subclass of ``AcceleratorClientError``.
    :param kwargs: the exception's own message fields.
    :returns: the exception.
    """
    code, message = error_details(resp)
    return exc_cls(status_code=resp.status_code, error_code=code,
                   error_message=message, **kwargs)


def json_body(resp, what):
    """The JSON object a response carries.

    :param resp: a ``requests.Response``.
    :param what: what was asked for (str), for the message.
    :returns: dict.
    :raises: AcceleratorClientError (no JSON, or not an object).
    """
    try:
        body = resp.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise exception.AcceleratorClientError(
            reason='malformed %s response: %r' % (what, resp.text[:200]),
            status_code=resp.status_code)
    return body
