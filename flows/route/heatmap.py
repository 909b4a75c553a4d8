"""The confusion heatmap: rows are where a query should go, columns what the router chose first (PNG, matplotlib).

A library of hundreds of skills makes a matrix nobody can read, so the plot keeps the skills in the most confused
pairs (at most ``MOST_SHOWN``) and says how many it left out.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence

from scoring.route_figures import Pick
from scoring.route_queries import NONE, RouteQuery

MOST_SHOWN = 30


def confusion_counts(queries: Sequence[RouteQuery], picks: Sequence[Pick], model: str) -> Counter[tuple[str, str]]:
    """(expected, chosen first) → runs, over the queries whose answer is known."""
    by_id = {q.id: q for q in queries}
    counts: Counter[tuple[str, str]] = Counter()
    for pick in picks:
        query = by_id.get(pick.query)
        if pick.model == model and query is not None and query.expected is not None and pick.first is not None:
            counts[query.expected, pick.first] += 1
    return counts


def shown_labels(counts: Counter[tuple[str, str]]) -> tuple[list[str], int]:
    """The labels plotted (the most confused first, none last) and how many were left out."""
    weight: Counter[str] = Counter()
    for (expected, chosen), n in counts.items():
        if expected != chosen:
            weight[expected] += n
            weight[chosen] += n
    every = {label for pair in counts for label in pair}
    ranked = sorted(every - {NONE}, key=lambda s: (-weight[s], s))
    kept = sorted(ranked[:MOST_SHOWN])
    return kept + ([NONE] if NONE in every else []), max(0, len(ranked) - MOST_SHOWN)


def heatmap_png(queries: Sequence[RouteQuery], picks: Sequence[Pick], model: str) -> bytes | None:
    """The PNG, or None when no query with a known answer was routed."""
    counts = confusion_counts(queries, picks, model)
    if not counts:
        return None
    import matplotlib

    matplotlib.use("Agg")  # no display: CI, a worker, a server
    import matplotlib.pyplot as plt

    labels, left_out = shown_labels(counts)
    rows = [[counts[e, c] for c in labels] for e in labels]
    totals = [sum(counts[e, c] for c in {c for _, c in counts}) or 1 for e in labels]
    shares = [[n / total for n in row] for row, total in zip(rows, totals, strict=True)]
    side = max(4.0, 0.35 * len(labels) + 2)
    figure, axes = plt.subplots(figsize=(side + 1, side))
    image = axes.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    axes.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
    axes.set_yticks(range(len(labels)), labels, fontsize=7)
    axes.set_xlabel("chosen first")
    axes.set_ylabel("should go to")
    note = f" ({left_out} skills in no confused pair left out)" if left_out else ""
    axes.set_title(f"Routing confusion, {model}{note}", fontsize=9)
    figure.colorbar(image, ax=axes, label="share of the row's runs")
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=110)
    plt.close(figure)
    return out.getvalue()
