"""Carrying out ARQ bindings and telling Nova about them."""
