"""Small helpers shared by the accel_backend layers."""


def isotime(value):
    """ISO 8601 text of a naive-UTC ``datetime`` (``None`` stays None)."""
    if value is None:
        return None
    return value.strftime('%Y-%m-%dT%H:%M:%S+00:00')
