"""JSON schemas of request bodies, with the semantic checks JSON schema
cannot express; ``validate`` turns failures into 400s."""

import jsonschema

from accel_backend import exception

# {id(schema): (schema, validator)}; the schema is kept so its id is not
# reused by another object.
_VALIDATORS = {}


def _validator(schema):
    """A checked, compiled validator for ``schema`` (dict), made once.

    ``schema`` must be a module-level constant: validators are kept by
    the schema object's identity for the life of the process.

    ``jsonschema.validate`` checks the schema itself (``check_schema``)
    and builds a validator on every call: 2 to 2.8 ms of every POST and
    PATCH, measured on the benchmark machine (issue 15).  The schemas are
    module constants, so each is checked once here.

    :raises jsonschema.SchemaError: the schema itself is invalid.
    """
    known = _VALIDATORS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


def validate(schema, body):
    """Validate ``body`` against ``schema`` (as ``jsonschema.validate``
    does: the best matching error is reported).

    :param schema: a JSON schema (dict).
    :param body: the decoded request body.
    :raises SchemaValidationError: with the failing path and reason.
    """
    error = jsonschema.exceptions.best_match(
        _validator(schema).iter_errors(body))
    if error is not None:
        where = '/'.join(str(p) for p in error.absolute_path)
        raise exception.SchemaValidationError(
            reason='%s%s' % ('at %s: ' % where if where else '',
                             error.message))
