"""What the flows edit a skill through: one protocol, two ratchets (git in full mode, snapshot files in quick mode).

Callers use only what this protocol carries. What exists only with git — the
run's commit history, worktrees for skills side by side, undoing a keep — is
reached through ``git``, which is None for the file ratchet: a capability the
type checker sees, instead of a check of which class the ratchet is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from workspace.layout import Workspace

if TYPE_CHECKING:
    from workspace.git_ratchet import GitRatchet


class Ratchet(Protocol):
    workspace: Workspace

    def write_skill(self, skill: str, text: str | bytes) -> None:
        """The one way an edit reaches a SKILL.md: an atomic write of that one file."""

    def pre_edit(self, skill: str) -> str:
        """Make the current version recoverable before an edit is written."""

    def keep(self, skill: str, delta: float, dim: str, edit: dict[str, Any] | None = None) -> str:
        """Make the file as it stands the kept version."""

    def rollback(self, skill: str) -> str:
        """Put the kept version back."""

    def restore_original(self, skill: str) -> str:
        """Put back the version the run started from, as the kept version."""

    def original_text(self, skill: str) -> bytes:
        """The version the run started from (what ``restore_original`` puts back)."""

    def head_sha(self) -> str:
        """The commit that holds the kept versions ("" where they are files, not commits)."""

    def kept_text(self, skill: str) -> tuple[bytes | None, str]:
        """The kept version (None when there is none yet) and the commit that holds it ("" without git)."""

    @property
    def git(self) -> GitRatchet | None:
        """The git ratchet behind this one, or None: history, worktrees and undoing a keep need git."""
