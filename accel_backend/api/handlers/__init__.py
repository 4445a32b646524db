"""One module per API resource of the Cyborg v2 API (openstack-cyborg
17.0.0, ``cyborg/api/controllers/v2``).

Every handler takes the ``webob.Request`` and the route's path segments
(str, named as in ``accel_backend.api.routes``), and returns a
``webob.Response`` (``api.util.response``).  Errors leave as
``accel_backend.exception.AccelBackendError`` subclasses, which
``api.wsgi.AccelApp`` turns into their status and an error document; every
handler may raise ``Forbidden`` (403) when the policy rule named in its
body refuses the caller, and the ones that read a body
``InvalidJSON``/``SchemaValidationError`` (400).  A handler's docstring
names the route, the answer and the other errors.
"""
