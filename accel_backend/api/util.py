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

"""Helpers shared by the API handlers."""

import json
import re
import urllib.parse

from oslo_log import log as logging
import webob

from accel_backend.api import schemas
from oslo_utils import uuidutils

from accel_backend.db import paging
from accel_backend import exception

JSON = 'application/json'
LOG = logging.getLogger(__name__)

#: WSGI environ key of the list of work to run after the answer is sent
#: (``api.deploy``'s outermost layer puts it there).
AFTER_RESPONSE = 'accel.after_response'


def after_response(req, fn):
    """Run ``fn()`` once the server has sent this request's answer, on
    the same thread; at once when the app is not served through
    ``api.deploy.make_app`` (no such list in the environ).

    ``fn`` must only start work whose state is already committed: it is
    not run when the server fails to send the answer and the process
    dies, and a restarted service must finish it from the database.
    """
    later = req.environ.get(AFTER_RESPONSE)
    if later is None:
        fn()
    else:
        later.append(fn)


def run_after_response(later):
    """Run the work ``after_response`` queued (list of callables); one
    that raises is logged and the others still run."""
    while later:
        fn = later.pop(0)
        try:
            fn()
        except Exception:
            LOG.exception('Work after the response failed')


def context(req):
    """The request's ``RequestContext``."""
    return req.environ['accel.context']


def version(req):
    """The request's microversion, ``(major, minor)``."""
    return req.environ['accel.version']


def service(req):
    """The ``accel_backend.service.Service`` serving the request."""
    return req.environ['accel.service']


def base_url(req):
    """Absolute URL of ``/v2`` as the client reached it (for links)."""
    return req.application_url + '/v2'


#: Deepest nesting of arrays/objects a request body may have (ours need
#: 4); deeper ones are refused before JSON schema recurses into them.
MAX_JSON_DEPTH = 32


#: Where a decoded string can get a lone surrogate or a NUL from: a JSON
#: escape of one, or the character itself (``json.loads`` decodes bytes
#: with ``surrogatepass``).  A text without any needs no string checked
#: (``_body_problem``'s ``strings``).
_SUSPECT = re.compile(
    r'\\u(?:0000|[dD][89abcdefABCDEF][0-9a-fA-F]{2})|[\x00\ud800-\udfff]')


def _body_problem(body, limit=MAX_JSON_DEPTH, strings=True):
    """Why ``body`` cannot be used, or None: containers nested deeper
    than ``limit``, a string holding a lone UTF-16 surrogate (JSON's
    ``"\\ud800"`` escape decodes to one; no database driver can store
    it) or a NUL character (PostgreSQL refuses it).  Iterative: a
    hostile body cannot exhaust the stack here.

    :param strings: False when the JSON text holds nothing that decodes
        to a surrogate or NUL (``_SUSPECT``): only the nesting is checked,
        and the walk of a large bind PATCH costs a fraction of what
        checking its every string does (the contributor guide's "Design
        measurements").
    """
    stack = [(body, 1)]
    kinds = (dict, list, str) if strings else (dict, list)
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            children = ()
            texts = (value,)
        elif isinstance(value, dict):
            children = value.values()
            texts = value.keys() if strings else ()
        elif isinstance(value, list):
            children = value
            texts = ()
        else:
            continue
        if depth > limit:
            return 'nested deeper than %d levels' % limit
        for text in texts:
            try:
                text.encode('utf-8')
            except UnicodeEncodeError:
                return 'a string holds a lone surrogate (%r)' % text[:40]
            if '\x00' in text:
                return 'a string holds a NUL character (%r)' % text[:40]
        stack.extend((c, depth + 1) for c in children
                     if isinstance(c, kinds))
    return None


def json_body(req, schema):
    """Parse and validate the JSON body.

    A body nested so deeply that Python's JSON decoder runs out of stack
    (about 1,000 levels, fewer inside the WSGI stack), or deeper than
    ``MAX_JSON_DEPTH``, or with a lone surrogate in a string, is a 400,
    never a 500.

    :raises InvalidJSON: not JSON, nested too deeply, lone surrogates.
    :raises SchemaValidationError: fails ``schema``.
    """
    raw = req.body or b'null'
    try:
        # What json.loads does with bytes, with the text kept for
        # _SUSPECT.
        text = raw.decode(json.detect_encoding(raw), 'surrogatepass')
        body = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise exception.InvalidJSON(reason=str(e))
    except RecursionError:
        raise exception.InvalidJSON(reason='nested too deeply')
    # Most bodies are ASCII without escapes: two scans in C, far cheaper
    # than the regex (the contributor guide's "Design measurements").
    suspect = not (text.isascii() and '\\u' not in text) and (
        _SUSPECT.search(text) is not None)
    problem = _body_problem(body, strings=suspect)
    if problem:
        raise exception.InvalidJSON(reason=problem)
    schemas.validate(schema, body)
    return body


def response(status, body=None):
    """A ``webob.Response`` of ``status`` (int, e.g. 200).

    :param body: None for no body at all (no ``Content-Type``: 204s), or
        anything ``json.dumps`` takes, sent as UTF-8 JSON with
        ``Content-Type: application/json`` (no charset parameter, as
        Cyborg's responses).
    :raises TypeError: ``body`` is not JSON-serialisable.
    """
    resp = webob.Response(status=status)
    if body is None:
        resp.content_type = None
        resp.body = b''
    else:
        resp.content_type = JSON
        resp.charset = None
        resp.body = json.dumps(body).encode('utf-8')
    return resp


def check_uuid(value):
    """:raises InvalidUUID: ``value`` is no UUID."""
    if not uuidutils.is_uuid_like(value):
        raise exception.InvalidUUID(value=value)
    return value


def query_uuid(req, name):
    """A query parameter that must be a UUID (None when absent).

    :raises InvalidUUID: present but malformed.
    """
    value = req.GET.get(name)
    return None if value is None else check_uuid(value)


_DIGITS = re.compile(r'[0-9]+')


def page_params(req):
    """``?limit=N&marker=<uuid>`` of a list request.

    :returns: ``(limit, marker)``; each None when absent.
    :raises InvalidLimit: limit is no integer from 0 to ``MAX_LIMIT``.
    :raises InvalidMarker: marker is no UUID.
    """
    limit = req.GET.get('limit')
    if limit is not None:
        # ASCII digits only (int() would take ' 5', '+5' or '٥').
        if not _DIGITS.fullmatch(limit) or int(limit) > paging.MAX_LIMIT:
            raise exception.InvalidLimit(value=limit, max=paging.MAX_LIMIT)
        limit = int(limit)
    marker = req.GET.get('marker')
    if marker is not None and not uuidutils.is_uuid_like(marker):
        raise exception.InvalidMarker(marker=marker)
    return limit, marker


def collection(req, key, views, limit):
    """A list response body ``{key: views}``.

    When the page is full (``limit`` items) it also carries
    ``<key>_links`` with a ``next`` link (the same query with
    ``marker`` set to the last item), the convention openstacksdk
    follows.
    """
    body = {key: views}
    if limit and len(views) == limit:
        query = [(k, v) for k, v in req.GET.items() if k != 'marker']
        query.append(('marker', views[-1]['uuid']))
        body[key + '_links'] = [{
            'rel': 'next',
            'href': '%s%s?%s' % (req.application_url, req.path,
                                 urllib.parse.urlencode(query))}]
    return body


def list_response(req, rule, key, list_fn, to_dict, filters=None,
                  view_args=()):
    """Answer a ``GET`` of a collection: the policy check, one page
    (``?limit=&marker=``), the wire views (Cyborg v2 list APIs).

    :param req: the ``webob.Request``.
    :param rule: the policy rule the caller must pass (str).
    :param key: the collection's key in the body (``'devices'``...).
    :param list_fn: an objects module's ``list_(session, limit=...,
        marker=..., **filters)`` returning model rows.
    :param to_dict: that module's ``to_dict(row, base_url, *view_args)``.
    :param filters: keyword arguments of ``list_fn`` (dict), or a callable
        taking the session and returning them (a filter that needs a
        lookup first); None for none.
    :param view_args: further positional arguments of ``to_dict``.
    :raises Forbidden: the caller may not list (403).
    :raises InvalidLimit: bad ``limit`` (400).
    :raises InvalidMarker: bad or unknown ``marker`` (400).
    :returns: a 200 ``webob.Response`` with ``collection``'s body.
    """
    context(req).can(rule)
    limit, marker = page_params(req)
    with service(req).db.transaction() as session:
        kwargs = filters(session) if callable(filters) else (filters or {})
        rows = list_fn(session, limit=limit, marker=marker, **kwargs)
        views = [to_dict(row, base_url(req), *view_args) for row in rows]
    return response(200, collection(req, key, views, limit))


def show_response(req, rule, uuid, get_fn, to_dict, view_args=()):
    """Answer a ``GET /{uuid}`` of one resource: the policy check, the
    UUID check, the wire view.

    :param req: the ``webob.Request``.
    :param rule: the policy rule the caller must pass (str).
    :param uuid: the path's UUID (str, unchecked).
    :param get_fn: an objects module's ``get(session, uuid)`` (raises
        its ``NotFound`` subclass: 404).
    :param to_dict: that module's ``to_dict(row, base_url, *view_args)``.
    :param view_args: further positional arguments of ``to_dict``.
    :raises Forbidden: the caller may not look (403).
    :raises InvalidUUID: ``uuid`` is no UUID (400).
    :returns: a 200 ``webob.Response`` with the view as its body.
    """
    context(req).can(rule)
    check_uuid(uuid)
    with service(req).db.transaction() as session:
        view = to_dict(get_fn(session, uuid), base_url(req), *view_args)
    return response(200, view)
