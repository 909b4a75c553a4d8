"""The key=value facts in a results.tsv note survive a round trip."""

from scoring.notes import fact_float, format_note, parse_note


def test_round_trip_with_digits_in_keys_and_semicolons_in_values():
    note = format_note({"strategy": "stop", "sha256": "ab12", "expected": 2.5, "empty": "", "none": None}, "text; with a semicolon")
    facts, text = parse_note(note)
    assert facts == {"strategy": "stop", "sha256": "ab12", "expected": "2.5"}
    assert text == "text, with a semicolon"
    assert fact_float(note, "expected") == 2.5 and fact_float(note, "strategy") is None and fact_float(note, "x") is None
