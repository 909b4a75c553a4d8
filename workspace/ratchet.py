"""What the flows edit a skill through: one protocol, two ratchets (git in full mode, snapshot files in quick mode).

Callers use only what this protocol carries. What exists only with git — the
run's commit history, worktrees for skills side by side, undoing a keep — is
reached through ``git``, which is None for the file ratchet: a capability the
type checker sees, instead of a check of which class the ratchet is. Only the
git ratchet edits a file other than SKILL.md (a Markdown file SKILL.md
references): quick mode's snapshots hold SKILL.md alone, and the file ratchet
refuses any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from workspace.layout import Workspace
from workspace.skill_source import SKILL_FILE

if TYPE_CHECKING:
    from workspace.git_ratchet import GitRatchet


class Ratchet(Protocol):
    workspace: Workspace

    def write_skill(self, skill: str, text: str | bytes, file: str = SKILL_FILE) -> None:
        """The one way an edit reaches a skill's file (SKILL.md unless named): an atomic write of that one file."""

    def pre_edit(self, skill: str, file: str = SKILL_FILE) -> str:
        """Make the current version of the file recoverable before an edit is written."""

    def keep(self, skill: str, delta: float, dim: str, edit: dict[str, Any] | None = None, file: str = SKILL_FILE) -> str:
        """Make the file as it stands the kept version."""

    def rollback(self, skill: str, file: str = SKILL_FILE) -> str:
        """Put the kept version of the file back."""

    def restore_original(self, skill: str) -> str:
        """Put back the version the run started from, as the kept version."""

    def original_text(self, skill: str) -> bytes:
        """The version the run started from (what ``restore_original`` puts back)."""

    def head_sha(self) -> str:
        """The commit that holds the kept versions ("" where they are files, not commits)."""

    def kept_text(self, skill: str, file: str = SKILL_FILE) -> tuple[bytes | None, str]:
        """The kept version of the file (None when there is none yet) and the commit that holds it ("" without git)."""

    @property
    def git(self) -> GitRatchet | None:
        """The git ratchet behind this one, or None: history, worktrees and undoing a keep need git."""
