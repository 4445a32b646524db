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

"""The ini files of the all-in-one cloud's services (``tools.aio.config``
writes their contents), kept in order with repeated keys."""


class Ini:
    """An ini file as ordered ``{section: [(key, value)]}``.

    Unlike ``configparser`` it keeps repeated keys (oslo.config's
    ``MultiStrOpt`` such as accel_backend's ``[discovery] device_spec``).
    """

    def __init__(self):
        self.sections = {}

    def set(self, section, key, value):
        """Set ``key`` (replacing earlier values); returns self."""
        items = self.sections.setdefault(section, [])
        items[:] = [(k, v) for k, v in items if k != key]
        items.append((key, _text(value)))
        return self

    def add(self, section, key, value):
        """Add one more value of ``key``; returns self."""
        self.sections.setdefault(section, []).append((key, _text(value)))
        return self

    def update(self, section, values):
        """``set`` every item of the dict ``values``; returns self."""
        for key, value in values.items():
            self.set(section, key, value)
        return self

    def remove(self, section):
        """Drop ``section`` and its keys (no-op when absent); returns
        self."""
        self.sections.pop(section, None)
        return self

    def get(self, section, key, default=None):
        """The last value of ``key`` in ``section``."""
        values = self.get_all(section, key)
        return values[-1] if values else default

    def get_all(self, section, key):
        """Every value of ``key`` in ``section``, in order (a list)."""
        return [v for k, v in self.sections.get(section, []) if k == key]

    def render(self):
        """The file's text."""
        out = []
        for section, items in self.sections.items():
            out.append('[%s]' % section)
            out.extend('%s = %s' % (k, v) for k, v in items)
            out.append('')
        return '\n'.join(out)


def _text(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (list, tuple)):
        return ','.join(_text(v) for v in value)
    return str(value)
