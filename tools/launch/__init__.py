"""How to launch each real component the tests and the all-in-one cloud
run: one module per component (:mod:`tools.launch.postgresql`,
:mod:`tools.launch.rabbitmq`), standard library only.

The modules know where the Debian packages (bindep.txt) put the programs
and which arguments, files and environment a private, loopback-only,
throwaway instance needs.  The process lifecycle stays with the caller:
``fixtures`` in ``tests/functional/fixtures`` (stopped at cleanup),
detached processes recorded in ``state.json`` in ``tools/aio``.
"""


class ComponentMissing(RuntimeError):
    """A program of a component is not installed; the message names the
    Debian package (bindep.txt)."""
