"""Skills side by side: threads, git worktrees per skill, and child flow runs on a pool's workers."""
