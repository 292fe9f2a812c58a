"""The frontends over the core: the headless printer, the console, the control commands,
the hangup guard, and the policy they share."""
