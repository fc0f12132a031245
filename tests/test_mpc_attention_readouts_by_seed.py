"""privtrans.mpc_attention.readouts.by_seed: every planned seed is kept, a lost one counted, never a
shorter pairing."""

from __future__ import annotations

import pytest

from privtrans.mpc_attention.readouts import schemes, tasks

from mpc_attention_readout_inputs import COSTS, NOT_HELD, QUAD, TEACHERS, _students, _table4, verdict


def test_tables2_6_and_table4_keep_every_planned_seed():
    # the converted model's seed 2 lost (NaN): its intervals keep 3 planned, 2 paired, and are not held
    after = {"2quad+quad": [0.70, 0.72, 0.69], "scaling+quad": [0.50, 0.51, 0.52],
             "2quad_freediv+quad": [0.712, 0.721, float("nan")]}
    r = schemes.tables2_6_schemes(TEACHERS, _students(after), COSTS, [0, 1, 2])
    cell = r["kept_within"]["student − teacher"]
    assert cell["n"] == 2 and cell["planned"] == 3 and r["best_minus_teacher"] is None
    assert verdict("t3_accuracy_kept", r) in NOT_HELD
    # one value too few is an error, never a shorter pairing
    short = {**after, "2quad_freediv+quad": [0.712, 0.721]}
    with pytest.raises(ValueError, match="2quad_freediv\\+quad after distillation: 2 values for the 3 planned seeds"):
        schemes.tables2_6_schemes(TEACHERS, _students(short), COSTS, [0, 1, 2])
    # Table 4: a student seed lost after distillation is counted in "raises"
    t = {"mr2": [{"metric": 0.7}] * 3}
    pairs = {k: [(0.5, 0.70), (0.52, 0.71), (0.51, float("nan"))] for k in QUAD}
    r = tasks.table4_5_tasks(t, {"mr2": _table4(pairs)}, [0, 1, 2])
    assert all(c["n"] == 2 and c["planned"] == 3 for c in r["raises"]["mr2"].values())
    assert verdict("t4_distillation_raises_mr2", r) in NOT_HELD
    with pytest.raises(ValueError, match="task 'mr2': teachers: 3 values for the 2 planned seeds"):
        tasks.table4_5_tasks(t, {"mr2": _table4({k: [(0.5, 0.7)] * 2 for k in QUAD})}, [0, 1])
    with pytest.raises(ValueError, match="no teachers"):
        tasks.table4_5_tasks({}, {"mr2": _table4(pairs)}, [0, 1, 2])
