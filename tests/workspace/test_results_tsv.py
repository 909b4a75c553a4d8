"""results.tsv: exact columns, one-decimal numbers, atomic appends, and repair without silent loss."""

from __future__ import annotations

from pathlib import Path

import pytest

from workspace.results_tsv import COLUMNS, HEADER, InvalidRow, ResultRow, ResultsFile


def row(**overrides) -> ResultRow:
    values = dict(timestamp="2026-12-02T15:00:00+00:00", skill="alpha", round=1, status="keep", mode="full",
                  commit="abc123", old_score=50.04, new_score=52.0, dim_changed="dim4", delta=1.96,
                  note="added 🛑 STOP\tbefore\nmerge", eval_mode="full_test", judge_count=2, edit_pct=3.25,
                  scores={"dim1": 10, "dim2": None, "dim4": 5.0}, held_out_score=7.0)
    values.update(overrides)
    return ResultRow(**values)


def test_header_is_the_designs_columns_then_lubans_own_at_the_end():
    assert HEADER.split("\t") == [
        "timestamp",
        "commit",
        "skill",
        "round",
        "old_score",
        "new_score",
        "status",
        "dim_changed",
        "delta",
        "note",
        "eval_mode",
        "judge_count",
        "mode",
        "edit_pct",
        "scores",
        "held_out_score",
        "stop",
        "samples",
        "bound",
        "llm_calls",
        "evidence",
    ]


def test_the_decision_columns_round_trip(tmp_path: Path):
    results = ResultsFile(tmp_path / "results.tsv")
    evidence = {"verdict": "keep", "basis": "dim5", "dims": {"dim5": {"n": [8, 12], "delta": 1.2, "lower": 0.31}}}
    results.append(row(stop="ceiling", samples="8/12", bound=0.558, llm_calls=23, evidence=evidence))
    back = results.rows()[0]
    assert (back.stop, back.samples, back.bound, back.llm_calls) == ("ceiling", "8/12", 0.56, 23)
    assert back.evidence == evidence


def test_an_unknown_stop_is_refused():
    with pytest.raises(InvalidRow, match="stop"):
        row(stop="gave_up")


def test_a_file_in_the_designs_sixteen_columns_still_reads_and_is_upgraded_on_the_next_append(tmp_path: Path):
    old_header = "\t".join(HEADER.split("\t")[:16])
    old_line = "\t".join(row().to_line().split("\t")[:16])
    path = tmp_path / "results.tsv"
    path.write_text(old_header + "\n" + old_line + "\n", encoding="utf-8")
    results = ResultsFile(path)
    assert [r.new_score for r in results.rows()] == [52.0] and results.rows()[0].stop == ""
    assert results.append(row(round=2, stop="bottleneck")) is None  # an upgrade, not a repair: no backup
    assert path.read_text(encoding="utf-8").split("\n")[0] == HEADER
    assert [r.round for r in results.rows()] == [1, 2] and not list(tmp_path.glob("results.tsv.bak*"))


def test_row_round_trip_with_one_decimal_and_empty_unknowns(tmp_path: Path):
    results = ResultsFile(tmp_path / "results.tsv")
    results.append(row())
    results.append(row(status="baseline", round=0, old_score=None, delta=None, dim_changed="", commit="",
                       judge_count=None, edit_pct=None, scores=None, held_out_score=None, eval_mode=""))
    lines = (tmp_path / "results.tsv").read_text(encoding="utf-8").split("\n")
    assert lines[0] == HEADER and lines[-1] == ""
    cells = lines[1].split("\t")
    assert len(cells) == len(COLUMNS)
    assert cells[4:6] == ["50.0", "52.0"] and cells[8] == "2.0" and cells[13] == "3.2"
    assert cells[9] == "added 🛑 STOP before merge"  # no tab or newline inside a cell
    assert cells[14] == '{"dim1":10,"dim2":null,"dim4":5.0}'
    empty = lines[2].split("\t")
    assert empty[1] == "" and empty[4] == "" and empty[11] == "" and empty[14] == ""
    back = results.rows()
    assert back[0].old_score == 50.0 and back[0].scores == {"dim1": 10, "dim2": None, "dim4": 5.0}
    assert back[1].old_score is None and back[1].judge_count is None


@pytest.mark.parametrize("field, value", [("status", "kept"), ("eval_mode", "guess"), ("mode", "lite")])
def test_invalid_values_are_refused(field, value):
    with pytest.raises(InvalidRow):
        row(**{field: value})


def test_non_finite_scores_are_refused(tmp_path: Path):
    with pytest.raises(InvalidRow):
        ResultsFile(tmp_path / "r.tsv").append(row(new_score=float("nan")))


def test_pandas_reads_it(tmp_path: Path):
    results = ResultsFile(tmp_path / "results.tsv")
    results.append(row())
    results.append(row(round=2, status="revert", delta=-1.0))
    frame = results.frame()
    assert list(frame.columns) == list(COLUMNS)
    assert frame["status"].tolist() == ["keep", "revert"]
    assert frame["delta"].tolist() == [2.0, -1.0]
    assert frame["commit"].tolist() == ["abc123", "abc123"]


def test_wrong_column_count_is_backed_up_and_rebuilt(tmp_path: Path):
    path = tmp_path / "results.tsv"
    results = ResultsFile(path)
    results.append(row())
    results.append(row(round=2))
    good = path.read_text(encoding="utf-8")
    path.write_text(good + "a\tb\tc\n", encoding="utf-8")
    repair = results.ensure()
    assert repair is not None and repair.kept == 2 and repair.dropped == 1
    assert repair.backup.name.startswith("results.tsv.bak.")
    assert repair.backup.read_text(encoding="utf-8") == good + "a\tb\tc\n"
    assert path.read_text(encoding="utf-8") == good
    assert "2 row(s)" in repair.message(path) and str(repair.backup) in repair.message(path)


def test_binary_garbage_is_backed_up_and_rebuilt_empty(tmp_path: Path):
    path = tmp_path / "results.tsv"
    garbage = bytes(range(256)) * 10
    path.write_bytes(garbage)
    repair = ResultsFile(path).ensure()
    assert repair is not None and repair.kept == 0
    assert repair.backup.read_bytes() == garbage
    assert path.read_text(encoding="utf-8") == HEADER + "\n"


def test_a_torn_last_line_is_detected_and_repaired_keeping_the_rest(tmp_path: Path):
    path = tmp_path / "results.tsv"
    results = ResultsFile(path)
    for n in range(3):
        results.append(row(round=n + 1))
    full = path.read_bytes()
    path.write_bytes(full[:-25])  # the last row cut mid-way, no newline
    repair = results.append(row(round=9))
    assert repair is not None and repair.kept == 2 and repair.dropped == 1
    assert [r.round for r in results.rows()] == [1, 2, 9]
    assert repair.backup.read_bytes() == full[:-25]


def test_missing_header_row_is_repaired(tmp_path: Path):
    path = tmp_path / "results.tsv"
    path.write_text(row().to_line() + "\n", encoding="utf-8")
    repair = ResultsFile(path).ensure()
    assert repair is not None and repair.kept == 1
    assert path.read_text(encoding="utf-8").startswith(HEADER + "\n")


def test_ensure_on_a_good_file_changes_nothing(tmp_path: Path):
    path = tmp_path / "results.tsv"
    results = ResultsFile(path)
    results.append(row())
    before = path.read_bytes()
    assert results.ensure() is None
    assert path.read_bytes() == before
    assert list(tmp_path.iterdir()) == [path]
