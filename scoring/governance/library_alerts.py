"""The library's checks: what changes for every skill at once, seen in every skill's latest run pooled.

One skill's run holds two or three attempts: too few for any test to see the proposer turn bad or the judges
drift (a keep rate of 0 of 2 happens by chance a third of the time). Such a change is the whole library's, so
these checks pool every skill's latest run and compare it with all the runs before, at the same alpha / 8 as the
per-skill checks (``alerts.k_for``); an alert here is the library's (``LIBRARY``), and its pause or freeze holds
every skill of the run.

- ``edit_outcomes`` (library): each attempt scores +1 kept, −1 worse beyond noise (the keep decision's revert
  verdict: a veto), 0 undecided; the mean over a *window* — the newest runs, back until they hold ``BLOCK``
  attempts — against every attempt before it, μ ± k·σ/√n. Below: edits stopped paying (the proposer, or the
  scorer, changed); above: the scorer may be too lenient (the design's low revert rate). The window slides with
  every run, so a change shows as soon as it fills one; after a firing, the next window holds only attempts made
  since (``since``), so one unlucky stretch cannot fire three times in a row (three firings pause every skill).
  Simulated on the outcome shares of a healthy noisy library (43 % kept, 20 % worse), 0.5 % of windows of six
  attempts fire (1.1 % of ten); when 65 % of the edits are worse, 60 % do (94 % of ten) — six, as a small library
  makes about two attempts a run once its proposer is bad (``benchmarks/weekly_runs.py`` measures it all through
  the flow).
- ``score_shift`` (library): the mean of the latest runs' shifts — a skill's baseline minus its previous baseline
  of the same text — against the earlier shifts, μ ± k·σ/√n. Judges that drift read an unchanged text
  differently, and every skill shows it at once.
"""

from __future__ import annotations

import math

from scoring.governance.alerts import MIN_POINTS, Alert, dynamic

LIBRARY = "*"  # the skill an alert about the whole library is filed under
BLOCK = 6  # attempts the outcome check waits for


def latest_and_before(metrics):
    """(every skill's latest run, every run before those): what the library checks compare."""
    latest = metrics.groupby("skill").tail(1)
    return latest, metrics.drop(index=latest.index)


def check_library(metrics, since: str = "") -> list[Alert]:
    """The library's two checks (none when fewer than two skills have runs); ``since``: the newest run the
    outcome check last fired on (its counter's ``last_fired``)."""
    if metrics.empty or metrics["skill"].nunique() < 2:
        return []
    latest, before = latest_and_before(metrics)
    return [_outcomes(metrics, since), _shift(latest, before, str(latest["started"].max()))]


def block(metrics, since: str):
    """(the newest runs after ``since``, back until they hold BLOCK attempts — all of them if fewer —, every run
    before those)."""
    ordered = metrics.sort_values("started", kind="stable").reset_index(drop=True)
    fresh = ordered[ordered["started"] > since] if since else ordered
    to_newest = fresh["attempts"][::-1].cumsum()[::-1]  # attempts from each run through the newest
    enough = to_newest[to_newest >= BLOCK]
    taken = fresh.loc[enough.index[-1]:] if len(enough) else fresh
    return taken, ordered.drop(index=taken.index)


def _outcomes(metrics, since: str) -> Alert:
    current, before = block(metrics, since)
    attempts = int(current["attempts"].sum())
    run = str(current["started"].max()) if len(current) else since
    tried = before[before["attempts"] > 0]
    earlier = int(tried["attempts"].sum())
    if len(tried) < MIN_POINTS or attempts < BLOCK:
        return Alert("edit_outcomes", LIBRARY, None, None, False, False,
                     f"edit_outcomes (library): waiting ({len(tried)} earlier run(s) with attempts, {MIN_POINTS} needed; "
                     f"{attempts} new attempt(s), {BLOCK} needed)", run=run)
    value = float(current["keeps"].sum() - current["worse"].sum()) / attempts
    # every earlier attempt's score (+1, −1 or 0) as the history: its mean and spread are the noise
    kept, worse = int(tried["keeps"].sum()), int(tried["worse"].sum())
    history = [1.0] * kept + [-1.0] * worse + [0.0] * (earlier - kept - worse)
    alert = dynamic("edit_outcomes", LIBRARY, value, history, "both",
                    f"mean outcome of {attempts} attempt(s) (kept +1, worse −1): edits stopped paying, or the scorer "
                    "changed", run, scale=math.sqrt(attempts))
    return alert


def _shift(latest, before, run: str) -> Alert:
    now = [s for s in latest["shift"] if s == s]
    if not now:
        return Alert("score_shift", LIBRARY, None, None, False, False,
                     "score_shift (library): inactive (no skill re-measured an unchanged text)", run=run)
    mean = sum(now) / len(now)
    return dynamic("score_shift", LIBRARY, mean, list(before["shift"]), "both",
                   f"mean over {len(now)} unchanged skill(s): the judges read unchanged texts differently (drift?)", run,
                   scale=math.sqrt(len(now)))
