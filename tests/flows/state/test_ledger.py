"""The run's samples: read for the judges' noise by one skill's round while another's adds to them."""

from __future__ import annotations

import json
import threading

from flows.state.ledger import Ledger
from scoring.samples import Measured


def test_the_noise_is_read_while_other_skills_add_samples_side_by_side():
    """--parallel online: a keep decision pools the noise over every text while other skills' rounds add samples.
    Iterating the live dict during an insert raises "dictionary changed size during iteration" in that round."""
    ledger, failures, done = Ledger(), [], threading.Event()

    def rounds(skill: str) -> None:
        for i in range(4_000):
            ledger.add(skill, f"version {i}", Measured.of({"dim2": [6.0, 6.5 + i % 3]}))
            ledger.add_held_out(skill, f"version {i}", (7.0, 7.5))
            ledger.next_index("evaluate", skill, f"version {i}")
        done.set()

    def decisions() -> None:
        while not done.is_set():
            try:
                ledger.noise()
                ledger.held_out_noise()
                ledger.record("alpha")
            except RuntimeError as err:
                failures.append(err)
                return

    threads = [threading.Thread(target=rounds, args=(s,)) for s in ("alpha", "beta")]
    threads += [threading.Thread(target=decisions) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == []
    assert ledger.noise()["dim2"].df == 2 * 4_000 and ledger.held_out_noise() is not None


def test_a_childs_samples_come_back_whole_and_replace_only_its_skills():
    """Online, the held-out gate and the skill's summary read the samples a fanned-out child took: they must arrive
    as taken, through JSON, and leave the other skills' samples as they were."""
    child, batch = Ledger(), Ledger()
    for ledger, offset in ((child, 0.0), (batch, 1.0)):
        for skill in ("alpha", "beta"):
            ledger.add(skill, "kept text", Measured.of({"dim2": [6.5 + offset, 7.0], "dim1": [8.0]}, exact=["dim1"]))
            ledger.add(skill, "candidate", Measured.of({"dim3": [5.0 + offset]}))
            ledger.add_held_out(skill, "kept text", (7.5 - offset, 8.0))
            ledger.next_index("evaluate", skill, "kept text")
            ledger.note_fallbacks(skill, ["judge unscored: truncated"] * (1 + int(offset)))
    child.next_index("resample", "alpha", "candidate")
    batch.replace("alpha", json.loads(json.dumps(child.record("alpha"))))
    assert batch.record("alpha") == child.record("alpha")
    assert batch.of("alpha", "kept text") == child.of("alpha", "kept text")
    assert batch.held_out_of("alpha", "kept text") == (7.5, 8.0)
    assert batch.next_index("resample", "alpha", "candidate") == 1  # the child's index came back with its samples
    assert batch.of("beta", "kept text").samples("dim2") == (7.5, 7.0)  # the other skill's samples stay the batch's
    assert batch.held_out_of("beta", "kept text") == (6.5, 8.0)
    assert batch.unshown_fallbacks("alpha") == {} and batch.unshown_fallbacks("beta") == {"judge unscored: truncated": 2}
    assert batch.unshown_fallbacks("beta") == {"judge unscored: truncated": 2}  # reading them changes nothing
    batch.shown("beta", {"judge unscored: truncated": 2}, ["json_schema refused"])
    assert batch.unshown_fallbacks("beta") == {} and batch.unshown_run_wide(["json_schema refused", "x"]) == ["x"]


def test_a_kept_text_is_compared_on_samples_its_keep_did_not_choose():
    """The samples that decided a keep lean high (read until they looked good): the next decision reads the kept
    text's later samples only, while its totals and the judges' noise still count every sample."""
    ledger = Ledger()
    ledger.add("alpha", "kept text", Measured.of({"dim2": [9.0, 8.5], "dim8": [9.0], "dim1": [8.0]}, exact=["dim1"]))
    assert ledger.comparable("alpha", "kept text") == ledger.of("alpha", "kept text")  # not kept yet: every sample
    ledger.kept("alpha", "kept text")
    assert ledger.comparable("alpha", "kept text") == Measured.of({"dim1": [8.0]}, exact=["dim1"])  # exact carries over
    ledger.add("alpha", "kept text", Measured.of({"dim2": [6.5]}))
    assert ledger.comparable("alpha", "kept text").samples("dim2") == (6.5,)
    assert ledger.of("alpha", "kept text").samples("dim2") == (9.0, 8.5, 6.5)
    assert ledger.noise()["dim2"].df == 2
    assert ledger.comparable("alpha", "other text") == Measured()
    batch = Ledger()
    batch.replace("alpha", json.loads(json.dumps(ledger.record("alpha"))))  # a fanned-out child hands it back
    assert batch.comparable("alpha", "kept text") == ledger.comparable("alpha", "kept text")
