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

Two libraries check a body: fastjsonschema's compiled validator decides
whether it is valid, and only for a body it refuses does jsonschema find
the error to report (and have the last word).  jsonschema alone walks
every node through its generic keyword functions: measured on the 2-core
benchmark machine, thread CPU of one bind PATCH body, 93 us for one ARQ
and 5.8 ms for 100; fastjsonschema's 4 us and 0.23 ms.
``tests/unit/accel_backend/test_schemas.py`` checks that the two agree on
every schema here, over a corpus of valid and broken bodies.
"""

import fastjsonschema
import jsonschema

from accel_backend import exception

# {id(schema): (schema, validator)}; the schema is kept so its id is not
# reused by another object.
_VALIDATORS = {}


def _validator(schema):
    """A checked, compiled validator for ``schema`` (dict), made once:
    ``(jsonschema validator, fastjsonschema validate function)``.

    ``schema`` must be a module-level constant: validators are kept by
    the schema object's identity for the life of the process.

    ``jsonschema.validate`` checks the schema itself (``check_schema``)
    and builds a validator on every call: 2 to 2.8 ms of every POST and
    PATCH, measured on the benchmark machine (issue 15).  The schemas are
    module constants, so each is checked and compiled once here.

    :raises jsonschema.SchemaError: the schema itself is invalid.
    """
    known = _VALIDATORS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    # Formats are annotations only, as for jsonschema without a
    # FormatChecker.
    pair = (cls(schema), fastjsonschema.compile(schema, use_formats=False))
    _VALIDATORS[id(schema)] = (schema, pair)
    return pair


def validate(schema, body):
    """Validate ``body`` against ``schema`` (as ``jsonschema.validate``
    does: the best matching error is reported).

    :param schema: a JSON schema (dict).
    :param body: the decoded request body.
    :raises SchemaValidationError: with the failing path and reason.
    """
    validator, fast = _validator(schema)
    try:
        fast(body)
        return
    except fastjsonschema.JsonSchemaException:
        pass
    error = jsonschema.exceptions.best_match(validator.iter_errors(body))
    if error is not None:
        where = '/'.join(str(p) for p in error.absolute_path)
        raise exception.SchemaValidationError(
            reason='%s%s' % ('at %s: ' % where if where else '',
                             error.message))
