"""Processes that speak: the sd_notify socket, readiness checks and the watchdog, and the
dependency graph's looks."""
