"""Hot-add and hot-remove accelerators to a running instance.

Nova has no such operation; nova_accel adds it without touching Nova:

* :mod:`.manager`: the pipeline (device profile -> Placement candidates on
  the instance's host -> allocation grown -> ARQs created, matched, bound
  -> binding waited for -> ``<hostdev>`` hot-plugged), with rollback;
* :mod:`.placement`: allocation candidates and consumer-generation-safe
  allocation edits;
* :mod:`.rpc`: the RPC server the compute drivers run on Nova's message
  bus and the client the ``nova-accel`` command uses;
* :mod:`.driver`: driver mixins (RPC server life cycle, hot-plugged devices
  kept across hard reboot/rebuild, ARQs deleted with the instance);
* :mod:`.state`: hot-plugged ARQs recorded in the instance's
  system_metadata.
"""
