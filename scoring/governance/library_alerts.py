"""The library's checks: what changes for every skill at once, seen in every skill's latest run pooled.

One skill's run holds two or three attempts: too few for any test to see the proposer turn bad or the judges
drift (a keep rate of 0 of 2 happens by chance a third of the time). Such a change is the whole library's, so
these checks pool every skill's runs and compare the newest with all the runs before, at the same alpha / 8 as
the per-skill checks; an alert here is the library's (``LIBRARY``), and its pause or freeze holds every skill of
the run.

- ``edit_outcomes`` (library, one-sided: edits stopped paying): each attempt is +1 kept, −1 worse beyond noise
  (the keep decision's revert verdict), 0 undecided. The newest attempts — windows of 3, 6 and 12 (``WINDOWS``):
  the newest runs back until they hold that many — against every attempt before each window, by the *exact*
  chance of an outcome sum that low under the earlier shares (three-valued outcomes of a few attempts are far from
  normal: a μ − k·σ/√n line fired on 6 of 100 steady simulated libraries' windows); the least likely window
  decides, at alpha / 8 shared by the three. A sharp change (edits that damage the skill) fills the window of 3
  first, a subtle one needs 12. After a firing, windows hold only attempts made since (``since``), so one unlucky
  stretch cannot fire twice. The upper side ("too lenient a scorer") is each skill's ``revert_rate``.
- ``score_shift`` (library): the mean of the latest runs' shifts — a skill's baseline minus its previous baseline
  of the same text — against the earlier shifts, μ ± k·σ/√n. Judges that drift read an unchanged text
  differently, and every skill shows it at once.

A firing opens an *episode* (its counter's ``count`` above 0): the history before the window that fired is its
``reference``, frozen. Until the counter resets, each check asks whether the change persists, on fresh evidence
against that reference at ``CONFIRM_ALPHA``: the outcomes of every attempt made since the last firing (at least
``CONFIRM``); each unchanged text's baseline against its baselines before the episode. A confirmation counts as a
firing, so a change that persists climbs the ladder to a pause (three firings) in two more runs with attempts.
Why the lower bar is safe: the first firing still needs alpha / 8, and each confirmation reads only attempts made
after the last firing, at 1 % a look (simulated: 0.3 % of steady libraries paused in 20 runs at 1 %, 0.7 % at
2 %, 2.5 % at 5 % — the growing window is looked at every run). Why it is needed: a proposer that turned bad gets
one or two attempts a run (the ratchet keeps none of them, and the ROI precheck rests skills that keep nothing),
and three disjoint windows of six took longer than ten weeks: no bad proposer ever paused a skill. While the
outcome episode is open the ROI precheck does not rest a skill for keeping nothing (``roi_precheck(watched=True)``):
those attempts are the evidence the ladder waits for. ``benchmarks/library_alerts_sim.py`` measures this check
alone over hundreds of simulated libraries, ``benchmarks/weekly_runs.py`` through the flow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from scoring.governance.alerts import ALPHA, CHECKS, MIN_POINTS, Alert, dynamic
from scoring.governance.escalation import Escalation

LIBRARY = "*"  # the skill an alert about the whole library is filed under
WINDOWS = (3, 6, 12)  # attempts in the windows the outcome check reads: a sharp change fills the first soonest
CONFIRM = 3  # fresh attempts a confirmation waits for
CONFIRM_ALPHA = 0.01  # a confirmation's error, per side


def latest_and_before(metrics):
    """(every skill's latest run, every run before those): what the library checks compare."""
    latest = metrics.groupby("skill").tail(1)
    return latest, metrics.drop(index=latest.index)


def check_library(metrics, counters: Mapping[str, Escalation] | None = None) -> list[Alert]:
    """The library's two checks (none when fewer than two skills have runs); ``counters``: their escalation state by
    alert name (where the last firing was, and an open episode's reference)."""
    if metrics.empty or metrics["skill"].nunique() < 2:
        return []
    counters = counters or {}
    outcomes, shift = counters.get("edit_outcomes", Escalation()), counters.get("score_shift", Escalation())
    ordered = metrics.sort_values("started", kind="stable").reset_index(drop=True)
    return [_confirm_outcomes(ordered, outcomes) if _open(outcomes) else _outcomes(ordered, outcomes.last_fired),
            _confirm_shift(ordered, shift) if _open(shift) else _shift(ordered)]


def _open(counter: Escalation) -> bool:
    return counter.count > 0 and bool(counter.reference)


def block(metrics, since: str, size: int):
    """(the newest runs after ``since``, back until they hold ``size`` attempts — all of them if fewer —, every run
    before those)."""
    ordered = metrics.sort_values("started", kind="stable").reset_index(drop=True)
    fresh = ordered[ordered["started"] > since] if since else ordered
    to_newest = fresh["attempts"][::-1].cumsum()[::-1]  # attempts from each run through the newest
    enough = to_newest[to_newest >= size]
    taken = fresh.loc[enough.index[-1]:] if len(enough) else fresh
    return taken, ordered.drop(index=taken.index)


def _counts(runs) -> tuple[int, int, int]:
    """(attempts, kept, worse beyond noise) of ``runs``."""
    return int(runs["attempts"].sum()), int(runs["keeps"].sum()), int(runs["worse"].sum())


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _newest(runs) -> str:
    return str(runs["started"].max()) if len(runs) else ""


def lower_tail(kept: float, worse: float, attempts: int, total: int) -> float:
    """P(the outcomes of ``attempts`` attempts sum to ``total`` or less), each +1 with probability ``kept``, −1 with
    ``worse``, else 0: exact (a normal approximation of so few three-valued outcomes is far off in the tails)."""
    sums = {0: 1.0}
    for _ in range(attempts):
        step: dict[int, float] = {}
        for value, chance in sums.items():
            for move, p in ((1, kept), (-1, worse), (0, 1.0 - kept - worse)):
                step[value + move] = step.get(value + move, 0.0) + chance * p
        sums = step
    return sum(chance for value, chance in sums.items() if value <= total)


def _chance(reference, current) -> tuple[float, float, int, int]:
    """(P(an outcome sum this low by chance), the reference's mean outcome, the current attempts, their sum): the
    reference's shares with one pseudo-attempt of each outcome added, so a short history makes no outcome impossible."""
    tried, kept, worse = _counts(reference)
    attempts, now_kept, now_worse = _counts(current)
    shares = (kept + 1) / (tried + 3), (worse + 1) / (tried + 3)
    total = now_kept - now_worse
    return lower_tail(*shares, attempts, total), shares[0] - shares[1], attempts, total


def _judge(reference, current, alpha: float, what: str, run: str, history_until: str = "") -> Alert:
    """The current attempts' outcome sum against the reference's shares, fired below ``alpha``."""
    chance, before, attempts, total = _chance(reference, current)
    fired = chance < alpha
    return Alert("edit_outcomes", LIBRARY, total / attempts, before, fired, True,
                 f"edit_outcomes {total / attempts:+.2f} (mean of {attempts} attempt(s): kept +1, worse −1) against "
                 f"{before:+.2f} before ({int(reference['attempts'].sum())} attempt(s)); by chance {chance:.2%} "
                 f"({'under' if fired else 'not under'} {alpha:.2%}): {what}", run=run, history_until=history_until)


def _outcomes(ordered, since: str) -> Alert:
    """The newest ``WINDOWS`` attempts since the last firing, each window against everything before it; the least
    likely one decides, at alpha / 8 shared between the windows."""
    judged = []
    for size in WINDOWS:
        current, before = block(ordered, since, size)
        tried = before[before["attempts"] > 0]
        if len(tried) >= MIN_POINTS and int(current["attempts"].sum()) >= size:
            judged.append((_chance(tried, current)[0], tried, current, before))
    if not judged:
        current, before = block(ordered, since, WINDOWS[0])
        return Alert("edit_outcomes", LIBRARY, None, None, False, False,
                     f"edit_outcomes (library): waiting ({int((before['attempts'] > 0).sum())} earlier run(s) with "
                     f"attempts, {MIN_POINTS} needed; {int(current['attempts'].sum())} new attempt(s), {WINDOWS[0]} "
                     "needed)", run=_newest(current) or since)
    _, tried, current, before = min(judged, key=lambda found: found[0])
    return _judge(tried, current, ALPHA / CHECKS / len(WINDOWS), "edits stopped paying, or the scorer changed",
                  _newest(current), _newest(before))


def _confirm_outcomes(ordered, counter: Escalation) -> Alert:
    """Does the change persist? Every attempt since the last firing (at least ``CONFIRM``) against the episode's
    reference: a subtle change shows as keeps that stop, which takes more than one run's attempts to tell."""
    reference = ordered[ordered["started"] <= counter.reference]
    current = ordered[ordered["started"] > counter.last_fired]
    attempts, run = int(current["attempts"].sum()), _newest(current) or counter.last_fired
    if attempts < CONFIRM:
        return Alert("edit_outcomes", LIBRARY, None, None, False, False,
                     f"edit_outcomes (library): confirming — {attempts} attempt(s) since it fired, {CONFIRM} needed",
                     run=run)
    return _judge(reference, current, CONFIRM_ALPHA, "does it persist? (the attempts since it fired)", run)


def _shift(ordered) -> Alert:
    latest, before = latest_and_before(ordered)
    run = _newest(latest)
    now = [s for s in latest["shift"] if s == s]
    if not now:
        return Alert("score_shift", LIBRARY, None, None, False, False,
                     "score_shift (library): inactive (no skill re-measured an unchanged text)", run=run)
    alert = dynamic("score_shift", LIBRARY, _mean(now), list(before["shift"]), "both",
                    f"mean over {len(now)} unchanged skill(s): the judges read unchanged texts differently (drift?)",
                    run, scale=math.sqrt(len(now)))
    return replace(alert, history_until=_newest(before))


def _confirm_shift(ordered, counter: Escalation) -> Alert:
    """Does the drift persist? Each skill re-measured since the last firing whose text is unchanged since the
    episode's reference: its latest baseline minus its baselines of that text up to the reference, against the
    shifts before the episode."""
    latest, _ = latest_and_before(ordered)
    earlier = ordered[ordered["started"] <= counter.reference]
    shifts = []
    for _, now in latest[latest["started"] > counter.last_fired].iterrows():
        same = earlier[(earlier["skill"] == now["skill"]) & (earlier["sha"] == now["sha"]) & (now["sha"] != "")
                       & (earlier["models"] == now["models"])]  # other models: a new reference, not the drift
        levels = [b for b in same["baseline"] if b == b]
        if levels and now["baseline"] == now["baseline"]:
            shifts.append(now["baseline"] - _mean(levels))
    run = _newest(latest)
    if not shifts:
        return Alert("score_shift", LIBRARY, None, None, False, False,
                     "score_shift (library): confirming — no skill re-measured a text unchanged since it fired", run=run)
    return dynamic("score_shift", LIBRARY, _mean(shifts), list(earlier["shift"]), "both",
                   f"does it persist? mean over {len(shifts)} skill(s) unchanged since before it fired, against their "
                   f"readings then (alpha {CONFIRM_ALPHA:g} a side)", run, scale=math.sqrt(len(shifts)), alpha=CONFIRM_ALPHA)
