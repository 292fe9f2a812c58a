"""A process's life: the machine that decides it (machine.py), nesting the stop sequence."""
