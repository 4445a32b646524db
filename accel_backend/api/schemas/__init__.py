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

"""JSON schemas of request bodies, with the semantic checks JSON schema
cannot express; ``validate`` turns failures into 400s.

One validator, jsonschema, with a format checker, as openstack/placement
does (``placement/schemas/common.py`` and ``placement/util.py``,
Placement 13): ``"format": "uuid"`` accepts what
``oslo_utils.uuidutils.is_uuid_like`` accepts (with or without hyphens,
any case), so a schema that says uuid checks it.
"""

import jsonschema
from oslo_utils import uuidutils

from accel_backend import exception

#: Formats ``validate`` checks; any other ``format`` is an annotation.
FORMAT_CHECKER = jsonschema.FormatChecker(formats=())


@FORMAT_CHECKER.checks('uuid')
def _is_uuid(instance):
    """True for a UUID string; non-strings are left to ``type``."""
    if not isinstance(instance, str):
        return True
    return uuidutils.is_uuid_like(instance)


# {id(schema): (schema, validator)}; the schema is kept so its id is not
# reused by another object.
_VALIDATORS = {}


def _validator(schema):
    """A checked validator for ``schema`` (dict), made once.

    ``schema`` must be a module-level constant: validators are kept by
    the schema object's identity for the life of the process, so each
    schema is checked (``check_schema``) once, not on every request as
    ``jsonschema.validate`` does.

    :raises jsonschema.SchemaError: the schema itself is invalid.
    """
    known = _VALIDATORS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=FORMAT_CHECKER)
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
