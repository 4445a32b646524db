"""Nova's side of ARQ binding, below the drivers and hot-plug.

:mod:`nova_accel.binding.waiter` waits for the ``accelerator-request-bound``
events of an instance's ARQs and refuses to build a guest with an ARQ that
is not ``Bound``; :mod:`nova_accel.binding.exception` holds the errors
both raise.  The compute drivers (:mod:`nova_accel.virt`) and hot-plug
(:mod:`nova_accel.hotplug`) use it; it imports neither.
"""
