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

"""``ini_tool.py set|add|insert FILE SECTION KEY VALUE`` and
``ini_tool.py delete|get FILE SECTION KEY``: devstack's iniset, iniadd,
iniadd_literal (the line first in its section), inidelete and iniget
(each value on a line of its own) on a real file, keeping repeated keys
(MultiStrOpt)."""

import os
import sys


def read(path):
    sections = {}
    current = None
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.rstrip('\n')
                if line.startswith('[') and line.endswith(']'):
                    current = sections.setdefault(line[1:-1], [])
                elif ' = ' in line and current is not None:
                    key, value = line.split(' = ', 1)
                    current.append((key, value))
    return sections


def write(path, sections):
    with open(path, 'w') as f:
        for name, items in sections.items():
            f.write('[%s]\n' % name)
            for key, value in items:
                f.write('%s = %s\n' % (key, value))
            f.write('\n')


def main(op, path, section, key, value=None):
    sections = read(path)
    if op == 'get':
        for k, v in sections.get(section, ()):
            if k == key:
                print(v)
        return
    items = sections.setdefault(section, [])
    if op in ('set', 'delete'):
        items[:] = [(k, v) for k, v in items if k != key]
    if op == 'insert':
        items.insert(0, (key, value))
    elif op != 'delete':
        items.append((key, value))
    write(path, sections)


if __name__ == '__main__':
    main(*sys.argv[1:])
