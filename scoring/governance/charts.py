"""The report's picture: readable at any library size (one line a skill for a few, a distribution for hundreds)."""

from __future__ import annotations

import io

from scoring.governance.report import before_after, latest_runs

PER_SKILL_LINES = 12  # up to this many skills, one line a skill; past it, a legend would cover the plot


def chart_png(frame) -> bytes:
    """Total after each round, one line per skill (a revert keeps the previous total); for a library of more than
    PER_SKILL_LINES skills, each skill's before → after sorted by gain and the distribution of gains instead."""
    from matplotlib.figure import Figure  # no pyplot: no global figure state, no GUI backend, half the import time

    run = latest_runs(frame)
    if run["skill"].nunique() > PER_SKILL_LINES:
        figure = _library_chart(run)
    else:
        figure = Figure(figsize=(7, 4), dpi=100)
        _rounds_chart(figure.subplots(), run)
        figure.subplots_adjust(left=0.09, right=0.98, top=0.92, bottom=0.12)  # fixed margins: tight_layout draws twice
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _rounds_chart(axes, run) -> None:
    for skill, group in run.groupby("skill", sort=True):
        points, current = [], None
        for _, row in group.iterrows():
            if row["status"] in ("baseline", "keep"):
                current = row["new_score"]
            if current is not None and current == current:
                points.append((int(row["round"]), float(current)))
        if points:
            axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=str(skill))
    axes.set_xlabel("round")
    axes.set_ylabel("total score")
    axes.set_title("Score per round")
    if run["skill"].nunique():
        axes.legend(fontsize="small")


def _library_chart(run):
    """Left: every skill's before → after, sorted by gain, the three best and worst named. Right: the gains."""
    from matplotlib.figure import Figure

    pairs = [(str(skill), *before_after(group)) for skill, group in run.groupby("skill", sort=True)]
    scored = sorted(((s, b, a) for s, b, a in pairs if b is not None and a is not None), key=lambda p: p[2] - p[1])
    figure = Figure(figsize=(11, 4.5), dpi=100)
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [2.2, 1]})
    for x, (_, before, after) in enumerate(scored):
        left.plot([x, x], [before, after], color="tab:green" if after > before else "tab:gray", linewidth=1)
    left.scatter(range(len(scored)), [b for _, b, _ in scored], s=6, color="tab:gray", label="before")
    left.scatter(range(len(scored)), [a for _, _, a in scored], s=6, color="tab:green", label="after")
    for x in sorted({*range(min(3, len(scored))), *range(max(0, len(scored) - 3), len(scored))}):
        name, before, after = scored[x]
        left.annotate(f"{name} {after - before:+.1f}", (x, after), fontsize="x-small", rotation=30,
                      xytext=(2, 6), textcoords="offset points")
    left.set_xlabel(f"{len(scored)} skills, sorted by gain")
    left.set_ylabel("total score")
    left.set_title("Before → after, per skill")
    left.set_xticks([])
    left.legend(fontsize="small", loc="lower right")
    gains = [a - b for _, b, a in scored]
    right.hist(gains, bins=min(30, max(5, len(gains) // 5)), color="tab:blue")
    right.set_xlabel("gain (total points)")
    right.set_ylabel("skills")
    right.set_title(f"Gains: {sum(g > 0 for g in gains)} up, {sum(g == 0 for g in gains)} unchanged")
    figure.subplots_adjust(left=0.06, right=0.98, top=0.9, bottom=0.12, wspace=0.22)
    return figure
