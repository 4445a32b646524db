"""Helpers shared by the API handlers."""

import json

import webob

from accel_backend.api import schemas
from oslo_utils import uuidutils

from accel_backend import exception

JSON = 'application/json'


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


def json_body(req, schema):
    """Parse and validate the JSON body.

    :raises InvalidJSON: not JSON.
    :raises SchemaValidationError: fails ``schema``.
    """
    try:
        body = json.loads(req.body or b'null')
    except (ValueError, UnicodeDecodeError) as e:
        raise exception.InvalidJSON(reason=str(e))
    schemas.validate(schema, body)
    return body


def response(status, body=None):
    """A webob response with a JSON body (or none)."""
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
