"""The run-wide inserted lines: read by every skill's boilerplate check while others' keeps add to them."""

from __future__ import annotations

import threading

from flows.state.inserted import InsertedBlocks
from scoring.boilerplate import boilerplate


def test_readers_never_see_the_mapping_change_under_them_while_skills_keep_side_by_side():
    """--parallel: one skill's keep adds its lines while another skill checks a proposal against all of them. A live
    dict read during a write raises "dictionary changed size during iteration" and kills that skill's round."""
    blocks, failures, done = InsertedBlocks(), [], threading.Event()

    def keeps() -> None:
        for i in range(20_000):
            blocks.add([f"a checklist line number {i}"], f"skill-{i % 7}")
        done.set()

    def checks() -> None:
        while not done.is_set():
            try:
                boilerplate(("a line no one wrote",), blocks.snapshot(), "skill-0")
            except RuntimeError as err:
                failures.append(err)
                return

    threads = [threading.Thread(target=keeps), threading.Thread(target=checks), threading.Thread(target=checks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == [] and len(blocks.snapshot()) == 20_000


def test_the_first_skill_to_insert_a_line_owns_it():
    blocks = InsertedBlocks()
    blocks.add(["use the staging database first"], "db-migration")
    blocks.add(["use the staging database first", "write the changelog"], "api-changelog")
    assert blocks.of("db-migration") == ["use the staging database first"]
    assert blocks.of("api-changelog") == ["write the changelog"]
    assert boilerplate(("use the staging database first",), blocks.snapshot(), "api-changelog").startswith("db-migration")
