"""What proctui keeps on disk in the run directory: the lock, PID files and their
leftovers, the journal, output logs."""
