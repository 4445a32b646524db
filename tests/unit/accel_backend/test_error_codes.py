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

"""The stable error codes live in one module, ``exception.codes``
(issue 52, as openstack/placement's ``placement/errors.py``), and every
exception of accel_backend names one of its constants.

The classes are read from the syntax trees of every accel_backend
module (importing them all would start ``accel_backend.cmd``'s
oslo.service backend), and the exception package's classes are also
checked at run time.
"""

import ast
import os
import re

import testtools

from accel_backend.conductor import dispatcher
from accel_backend.db import models
from accel_backend import exception
from accel_backend.exception import codes

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))
PKG = os.path.join(ROOT, 'accel_backend')
CODES_PATH = os.path.join(PKG, 'exception', 'codes.py')
#: ``accel.<word>`` or ``accel.<topic>.<word>``, the form every code had
#: before they were gathered.
PATTERN = re.compile(r'^accel\.[a-z_]+(\.[a-z_]+)?$')


def constants(module=codes):
    """``{name: value}`` of the upper-case names of ``module``."""
    return {k: v for k, v in vars(module).items() if k.isupper()}


def _base_name(node):
    """``Foo`` of a base written ``Foo`` or ``mod.Foo``, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def class_codes(source, filename='<snippet>'):
    """``[(line, class name, node)]``: each ``code = ...`` (or ``code:
    T = ...``) in the body of an exception class of ``source``, ``node``
    its value.

    A class is an exception when a base is named ``*Error``,
    ``*Exception``, a class of ``accel_backend.exception`` or an
    exception class of the same source (a table's ``code`` column is
    not a code).
    """
    classes = [c for c in ast.walk(ast.parse(source, filename))
               if isinstance(c, ast.ClassDef)]
    known = set(exception.__all__)
    errors, grew = set(), True
    while grew:
        grew = False
        for cls in classes:
            if cls.name in errors:
                continue
            for base in map(_base_name, cls.bases):
                if base and (base in known or base in errors or
                             base.endswith(('Error', 'Exception'))):
                    errors.add(cls.name)
                    grew = True
                    break
    found = []
    for cls in classes:
        if cls.name not in errors:
            continue
        for node in cls.body:
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
            else:
                continue
            if any(isinstance(t, ast.Name) and t.id == 'code'
                   for t in targets):
                found.append((node.lineno, cls.name, node.value))
    return found


def constant_named(node):
    """The name of ``codes`` that ``node`` reads (``codes.X`` or
    ``exception.codes.X``), else None."""
    if (isinstance(node, ast.Attribute) and
            isinstance(node.value, (ast.Name, ast.Attribute)) and
            (getattr(node.value, 'id', None) == 'codes' or
             getattr(node.value, 'attr', None) == 'codes')):
        return node.attr
    return None


def sources():
    """``(path from the repository root, text)`` of every module of
    accel_backend but ``exception/codes.py``."""
    for dirpath, _, files in os.walk(PKG):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            if name.endswith('.py') and path != CODES_PATH:
                with open(path, encoding='utf-8') as f:
                    yield os.path.relpath(path, ROOT), f.read()


def subclasses(cls):
    """Every subclass of ``cls``, at any depth."""
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)


class CodesModuleTest(testtools.TestCase):

    def test_every_value_has_the_code_form(self):
        self.assertEqual([], sorted(
            '%s = %r' % kv for kv in constants().items()
            if not isinstance(kv[1], str) or not PATTERN.match(kv[1])))

    def test_no_two_constants_share_a_value(self):
        by_value = {}
        for name, value in constants().items():
            by_value.setdefault(value, []).append(name)
        self.assertEqual({}, {v: sorted(n) for v, n in by_value.items()
                              if len(n) > 1})

    def test_every_name_is_its_value(self):
        self.assertEqual([], sorted(
            name for name, value in constants().items()
            if name != value[len('accel.'):].replace('.', '_').upper()))

    def test_every_value_fits_the_host_status_column(self):
        # A refused or failing host records its error's code there.
        width = models.HostStatus.code.type.length
        self.assertEqual([], sorted(v for v in constants().values()
                                    if len(v) > width))

    def test_values_unchanged(self):
        # Clients match on these: a changed value breaks them.
        self.assertEqual('accel.internal_error', codes.INTERNAL_ERROR)
        self.assertEqual('accel.arq.bind_dispatch_failed',
                         codes.ARQ_BIND_DISPATCH_FAILED)
        self.assertEqual('accel.conductor.not_this_host',
                         codes.CONDUCTOR_NOT_THIS_HOST)
        self.assertEqual('accel.discovery.no_interrupt_remapping',
                         codes.DISCOVERY_NO_INTERRUPT_REMAPPING)
        self.assertEqual('accel.taint.not_found', codes.TAINT_NOT_FOUND)
        self.assertEqual('accel.taint.invalid_function',
                         codes.TAINT_INVALID_FUNCTION)
        self.assertEqual(49, len(constants()))


class ClassesUseTheConstantsTest(testtools.TestCase):

    def test_planted(self):
        source = '\n'.join((
            'class A(exception.AccelBackendError):',
            '    code = codes.NOT_FOUND',
            'class B(A):',
            "    code = 'accel.not_found'",
            'class C(ValueError):',
            '    code: str = exception.codes.CONFLICT',
            'class Row(models.Base):',
            '    code = sa.Column(sa.String(64))',
            'def f():',
            "    code = 'not a class attribute'",
        ))
        found = [(line, name, constant_named(node))
                 for line, name, node in class_codes(source)]
        self.assertEqual([(2, 'A', 'NOT_FOUND'), (4, 'B', None),
                          (6, 'C', 'CONFLICT')], found)

    def test_every_class_code_names_a_constant(self):
        names = constants()
        wrong, seen = [], 0
        for path, text in sources():
            for line, cls, node in class_codes(text, path):
                seen += 1
                if constant_named(node) not in names:
                    wrong.append('%s:%d %s: code = %s' % (
                        path, line, cls, ast.unparse(node)))
        self.assertEqual([], wrong)
        # The scan found the classes (47 codes, 47 classes today).
        self.assertGreaterEqual(seen, len(names))

    def test_no_code_written_out_elsewhere(self):
        values = set(constants().values())
        found = []
        for path, text in sources():
            for node in ast.walk(ast.parse(text, path)):
                if isinstance(node, ast.Constant) and node.value in values:
                    found.append('%s:%d %r' % (path, node.lineno,
                                               node.value))
        self.assertEqual([], found)

    def test_every_exception_has_a_defined_code(self):
        values = set(constants().values())
        classes = [exception.AccelBackendError] + list(
            subclasses(exception.AccelBackendError))
        self.assertIn(dispatcher.BindDispatchFailed, classes)
        self.assertEqual([], sorted(
            '%s.%s: %r' % (c.__module__, c.__qualname__, c.code)
            for c in classes if c.code not in values))
