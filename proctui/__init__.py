"""proctui: run several supervised commands and stop them visibly and steerably."""

__version__ = "0.1.0"
