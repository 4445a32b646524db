"""Placement reporting: devices as nested resource providers."""
