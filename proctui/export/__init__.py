"""Carrying a proctui config into another engine (systemd units)."""
