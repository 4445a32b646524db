"""Talking back to Nova: the ``accelerator-request-bound`` external event."""
