"""JSON schemas of request bodies, with the semantic checks JSON schema
cannot express; ``validate`` turns failures into 400s."""

import jsonschema

from accel_backend import exception


def validate(schema, body):
    """Validate ``body`` against ``schema``.

    :raises SchemaValidationError: with the failing path and reason.
    """
    try:
        jsonschema.validate(body, schema)
    except jsonschema.ValidationError as e:
        where = '/'.join(str(p) for p in e.absolute_path)
        raise exception.SchemaValidationError(
            reason='%s%s' % ('at %s: ' % where if where else '', e.message))
