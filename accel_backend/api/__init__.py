"""The Cyborg v2 compatible REST API (webob + routes)."""
