"""privtrans.book.replay: a notebook's readout call kept, reached again through the chapter's declared
readouts, and replayed on tables generated in place of the ones it was given."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from privtrans.book import claims, replay, session
from privtrans.book.records import Draw

from dp_icl_readout_inputs import TS, U, t_runs

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """A session of dp_icl's Figure 3 notebook that records its readout's values, as a build does."""
    monkeypatch.setenv("PRIVTRANS_ROOT", str(tmp_path))
    (tmp_path / "_config.yml").write_text("")
    nb = session.start("dp_icl", "fig3_early_stopping", "smoke", 0)
    from privtrans.dp_icl import readouts

    runs = t_runs({"descent": lambda t: 1 / t, "privacy": U.get}, noise=0.1, seed=1)
    nb.record(**readouts.fig3_early_stopping(runs, TS), plain=1.0)
    out = nb.finish()
    return tmp_path, out, runs


def test_the_kept_call_is_the_readout_and_its_arguments(kept):
    root, out, runs = kept
    calls = session.load_inputs("dp_icl", "fig3_early_stopping", root)
    assert [c["function"] for c in calls] == ["privtrans.dp_icl.readouts.early_stopping.fig3_early_stopping"]
    assert "plain" not in calls[0]["keys"] and "privacy_u_shape" in calls[0]["keys"]  # a value of the notebook's own
    call = replay.Call.of("dp_icl", "fig3_early_stopping", calls[0])
    assert call.fn().__module__ == "privtrans.dp_icl.readouts.early_stopping"
    assert not hasattr(call.fn(), "__wrapped__")  # the readout itself, not the session's watcher
    f = call.frames["runs"]
    assert f.replicate == "rep" and not f.training and set(f.values) == {"descent", "privacy"}


def test_the_recorded_tables_replay_the_recorded_cells_and_generated_ones_do_not(kept):
    root, out, runs = kept
    doc = claims.load("dp_icl", REPO)
    c = next(c for c in doc["claims"] if c["id"] == "fig3_u_shape")
    env = claims.environment({"fig3_early_stopping": out})
    path = replay.build("dp_icl", c, env, {"fig3_early_stopping": session.load_inputs("dp_icl", "fig3_early_stopping",
                                                                                      root)})
    recorded = claims.decide(c, env)
    again = path.judge(path.tables(replay.recorded_targets(path), None), gated=True)
    assert again[:3] == recorded
    drawn = path.judge(path.tables(replay.recorded_targets(path), np.random.default_rng(0)))
    assert drawn[2] != recorded[2]  # new seeds, new cells
    assert len(path.calls[0]._memo) == 2  # one replay per distinct set of tables


def test_one_draw_of_seeds_serves_every_table():
    """A run's scores and its curves are resampled as the same seeds: one Draw, shared."""
    d = Draw(np.random.default_rng(0))
    assert d.seeds(5) is d.seeds(5) and d.seeds(5)[0].shape == (5,) and d.seeds(3)[1].shape == (3, 3)


def test_a_claim_whose_values_no_readout_returned_is_said(kept):
    root, out, runs = kept
    env = claims.environment({"fig3_early_stopping": out})
    c = {"id": "x", "notebook": "fig3_early_stopping", "interval": "fig3_early_stopping.plain", "margin": 0}
    with pytest.raises(ValueError, match="not returned by a readout"):
        replay.build("dp_icl", c, env, {"fig3_early_stopping": session.load_inputs("dp_icl", "fig3_early_stopping",
                                                                                  root)})
