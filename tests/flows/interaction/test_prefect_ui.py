"""The approval form in the real Prefect UI, driven by headless Chromium (Debian's chromium + Playwright)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tests.flows.prefect_server import batch_finished, paused_runs, start_batch, stop, wait_for

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.mark.slow
@pytest.mark.timeout(900)  # a browser, a served deployment and four checkpoints: 2-3 min alone, over 5 beside another suite
def test_paused_run_is_approved_through_the_ui_form(prefect_server: dict, example_skills: Path, tmp_path: Path):
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: `apt-get install chromium` (.ci/run and `make test` do it as root)")
    from playwright.sync_api import expect, sync_playwright

    env = prefect_server
    api = env["PREFECT_API_URL"].removesuffix("/api")
    serve = start_batch(env, example_skills, "api-changelog")
    submitted: list[tuple[str, str]] = []
    last_try: dict[tuple[str, str], float] = {}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})

            def answer_in_the_ui() -> bool:
                for run_id, checkpoint, _ in paused_runs(env):  # the REST API: a CLI process per poll costs seconds
                    if time.monotonic() - last_try.get((run_id, checkpoint), 0) < 10:
                        continue  # submitted moments ago: give the run time to leave the paused state
                    last_try[(run_id, checkpoint)] = time.monotonic()
                    page.goto(f"{api}/runs/flow-run/{run_id}", wait_until="domcontentloaded")
                    page.get_by_role("button", name="Resume").click()
                    dialog = page.get_by_role("dialog")
                    expect(dialog).to_contain_text(f"🔴 {checkpoint}", timeout=30_000)  # the checkpoint's summary on the form
                    expect(dialog).to_contain_text("Comment", timeout=30_000)
                    dialog.locator("textarea").last.fill(f"approved in the UI at {checkpoint}")
                    page.screenshot(path=str(tmp_path / f"form-{len(submitted)}.png"))
                    dialog.get_by_role("button", name="Submit").click()
                    try:
                        expect(dialog).to_be_hidden(timeout=60_000)
                    except AssertionError:  # a loaded machine: the run is still listed, so the next poll tries again
                        page.reload()
                        continue
                    if (run_id, checkpoint) not in submitted:
                        submitted.append((run_id, checkpoint))
                return batch_finished(env, example_skills)

            wait_for(answer_in_the_ui, 600, "the run to finish after every checkpoint was answered in the UI")
            browser.close()
    finally:
        stop(serve)
    assert [c for _, c in submitted][:2] == ["test-prompts", "baseline"]
    assert (tmp_path / "form-0.png").read_bytes()[:4] == b"\x89PNG"
    rows = (example_skills.parent / "luban-workspace" / "quick" / "api-changelog" / "results.tsv").read_text()
    assert "\tbaseline\t" in rows
