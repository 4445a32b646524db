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

"""What the RST guides claim, read from their source (``tools.check_docs``).

The claims are taken from literal text only: inline ````literals```` and
literal blocks (``::`` paragraphs and ``code-block`` directives), where the
guides name commands, options, ports and metrics.  ``literalinclude``
files (``etc/``) are not read here.

``Text.literals()`` yields ``Literal(line, text, context, lang)``:

* ``line``: 1-based line of the literal's start in the file;
* ``text``: the literal, runs of whitespace made one space (an inline
  literal may run over several lines); for a block, its lines as written;
* ``context``: the paragraph around an inline literal, or the block and
  the paragraph that leads into it (for the port rule);
* ``lang``: ``None`` for an inline literal, else the block's language
  (``console``, ``ini``, ``none``; ``''`` for a ``::`` block).

The extractors below return ``(line, kind, claim)`` tuples with ``kind``
one of ``command``, ``option``, ``port``, ``role``, ``metric``.
"""

import collections
import re

Literal = collections.namedtuple('Literal', 'line text context lang')

_DIRECTIVE = re.compile(r'^(\s*)\.\. code-block::\s*(\S*)\s*$')
_INLINE = re.compile(r'``(.+?)``', re.S)


class Text:
    """One RST file's text.

    :param text: the file's contents (str).
    """

    def __init__(self, text):
        self.lines = text.splitlines()

    def _blocks(self):
        """:returns: list of ``(start, end, lang, lead)``: 0-based line
        range of a literal block's body, its language and the index of the
        line that opened it."""
        blocks = []
        i = 0
        while i < len(self.lines):
            line = self.lines[i]
            m = _DIRECTIVE.match(line)
            opens = m is not None or (
                line.rstrip().endswith('::') and
                not line.lstrip().startswith('..'))
            if not opens:
                i += 1
                continue
            indent = len(line) - len(line.lstrip())
            lang = m.group(2) if m else ''
            j = i + 1
            body = []
            while j < len(self.lines):
                cur = self.lines[j]
                if cur.strip() and len(cur) - len(cur.lstrip()) <= indent:
                    break
                if cur.strip() and not (m and not body and
                                        cur.strip().startswith(':')):
                    body.append(j)
                j += 1
            if body:
                blocks.append((body[0], body[-1] + 1, lang, i))
            i = max(j, i + 1)
        return blocks

    def _paragraph(self, index):
        start = end = index
        while start > 0 and self.lines[start - 1].strip():
            start -= 1
        while end + 1 < len(self.lines) and self.lines[end + 1].strip():
            end += 1
        return ' '.join(x.strip() for x in self.lines[start:end + 1])

    def literals(self):
        """:returns: list of ``Literal``, blocks first, then inline ones
        outside the blocks."""
        found = []
        in_block = set()
        for start, end, lang, lead in self._blocks():
            in_block.update(range(start, end))
            body = '\n'.join(self.lines[start:end])
            found.append(Literal(start + 1, body,
                                 self._paragraph(lead) + '\n' + body, lang))
        prose = '\n'.join('' if n in in_block else line
                          for n, line in enumerate(self.lines))
        for m in _INLINE.finditer(prose):
            line = prose.count('\n', 0, m.start())
            found.append(Literal(line + 1, ' '.join(m.group(1).split()),
                                 self._paragraph(line), None))
        return found

    def prose(self):
        """:returns: ``[(line, text)]`` of the lines outside blocks."""
        in_block = set()
        for start, end, _lang, _lead in self._blocks():
            in_block.update(range(start, end))
        return [(n + 1, line) for n, line in enumerate(self.lines)
                if n not in in_block]


def console_commands(lit):
    """Commands of a literal: each ``$ `` line of a console block (lines
    ending in ``\\`` joined), or the whole inline literal.

    :returns: list of str.
    """
    if lit.lang is None:
        return [lit.text]
    if lit.lang != 'console':
        return []
    commands, cur = [], None
    for line in lit.text.splitlines():
        s = line.strip()
        if cur is None:
            if not s.startswith('$ '):
                continue
            cur = s[2:]
        else:
            cur += ' ' + s
        if cur.endswith('\\'):
            cur = cur[:-1].rstrip()
            continue
        commands.append(re.sub(r'\s+#.*$', '', cur))
        cur = None
    return commands


_SCRIPT = re.compile(
    r'(?<![\w./@:$-])((?:accel-backend|nova-accel)(?:-[a-z]+)*)'
    r'(?![\w./:\[-])')


def script_uses(command):
    """Our console scripts named in ``command`` (a str).

    :returns: list of ``(script, words after it)``.
    """
    uses = []
    for m in _SCRIPT.finditer(command):
        uses.append((m.group(1), command[m.end():].split()))
    return uses


def _placeholder(word):
    return (word in ('...', '…') or word.startswith(('<', '"', "'", '{')) or
            word.endswith('...'))


#: oslo.config's own command-line options (``ConfigOpts``), taking a value.
GLOBAL_OPTIONS = ('--config-file', '--config-dir')


def walk(tree, words):
    """Follow ``words`` (command-line words after a script's name) through
    ``tree`` and say what does not exist.

    :param tree: ``{'commands': {name: tree}, 'flags': set of str,
        'positionals': int}``, built from the program's argparse parser.
    :returns: list of str (problems; empty when every subcommand and flag
        named exists).
    """
    problems = []
    node, path = tree, []
    i = 0
    while i < len(words):
        word = words[i].strip('[]')
        i += 1
        if word in GLOBAL_OPTIONS:
            i += 1
            continue
        if not word or _placeholder(word) or word in ('|', '&&', ';'):
            if word in ('|', '&&', ';'):
                break
            continue
        if word.startswith('-'):
            flag = word.split('=', 1)[0]
            if flag not in node['flags']:
                problems.append('%s has no option %s' % (
                    ' '.join(path) or 'the command', flag))
            continue
        if node['commands']:
            if word not in node['commands']:
                problems.append('%s has no subcommand %r (it has: %s)' % (
                    ' '.join(path) or 'the command', word,
                    ', '.join(sorted(node['commands']))))
                break
            node = node['commands'][word]
            path.append(word)
    return problems


def openstack_uses(command):
    """Words after ``openstack`` in ``command`` up to the first option,
    placeholder or quoted argument.

    :returns: list of lists of str.
    """
    uses = []
    for m in re.finditer(r'(?<![\w-])openstack\s+([a-z][\w\s-]*)', command):
        words = []
        for w in m.group(1).split():
            if w.startswith('-') or not re.match(r'^[a-z][a-z0-9-]*$', w):
                break
            words.append(w)
        if words:
            uses.append(words)
    return uses


_OPTION = re.compile(r'(?<![\w\]-])\[([A-Za-z_][\w<>-]*)\]'
                     r'(?:\s+([a-z_]\w*))?')
_SECTION = re.compile(r'^\s*\[([A-Za-z_][\w<>-]*)\]\s*$')
_KEY = re.compile(r'^\s*([A-Za-z_]\w*)\s*=')


def option_refs(lit):
    """``[group] name`` references of a literal (an inline one, or an
    ``ini`` block's sections and keys; comments are not read).

    :returns: list of ``(line, group, name or None)``.
    """
    refs = []
    if lit.lang is None:
        for m in _OPTION.finditer(lit.text):
            refs.append((lit.line, m.group(1), m.group(2)))
    elif lit.lang == 'ini':
        group = None
        for n, line in enumerate(lit.text.splitlines()):
            if line.strip().startswith('['):
                m = _SECTION.match(line)
                group = m.group(1) if m else None
                if group:
                    refs.append((lit.line + n, group, None))
                continue
            m = _KEY.match(line)
            if group and m and not line.strip().startswith('#'):
                refs.append((lit.line + n, group, m.group(1)))
    return refs


_PORT = re.compile(
    r'(?:(?<=[\s(])|^|(?<=localhost)|(?<=\d\.\d)|(?<=>)|(?<=host))'
    r':(\d{2,5})(?![\w.:])'
    r'|\bport\s*=?\s*(\d{2,5})\b')


def ports(lit):
    """Port numbers stated in a literal: ``host:PORT``, ``:PORT``,
    ``port = PORT`` (PCI ids such as ``10de:1eb8`` are not ports).

    :returns: list of ``(int, section)``: ``section`` is the ini block's
        section the port is in (str), else None.
    """
    if lit.lang is None:
        return [(int(m.group(1) or m.group(2)), None)
                for m in _PORT.finditer(' ' + lit.text)]
    found, section = [], None
    for line in lit.text.splitlines():
        m = _SECTION.match(line) if lit.lang == 'ini' else None
        if m:
            section = m.group(1)
            continue
        found += [(int(p.group(1) or p.group(2)), section)
                  for p in _PORT.finditer(line)]
    return found


_METRIC = re.compile(r'(?<![\w./-])(accel_[a-z0-9_]+)(?![\w./])')


def accel_names(lit):
    """``accel_*`` identifiers of a literal that are not part of a dotted
    or slashed name (modules, files, payload fields).

    :returns: list of str.
    """
    return _METRIC.findall(lit.text)


_ROLE = re.compile(r'(?:^|(?<=[\s(]))(?:``)?([A-Za-z][\w-]*)(?:``)?'
                   r'\s+role\b')
_ROLE_SET = re.compile(r'\brole\s*=\s*(?:``)?([A-Za-z]\w*)')


def role_names(text):
    """``ROLE role`` and ``role = ROLE`` phrases of a prose line.

    :returns: list of str (the words, as written).
    """
    return _ROLE.findall(text) + _ROLE_SET.findall(text)
