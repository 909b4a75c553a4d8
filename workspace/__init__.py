"""State on disk: skill files, git, atomic writes and the optimizer's records."""
