"""One module per API resource; each handler takes a webob request and
returns a webob response."""
