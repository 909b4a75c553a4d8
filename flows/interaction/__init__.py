"""People and terminals: checkpoints, progress, interrupts, events, the doctor command, usage errors."""
