"""privtrans.dpformer.readouts.long_tail (Figure 5) on hand-made data statistics, and its claims' verdicts."""

from __future__ import annotations

import pytest

from privtrans.dpformer.readouts import long_tail

from dpformer_readout_inputs import STATS, verdicts


def test_fig5_by_hand_and_claims():
    amz = {**STATS, "density": 0.0078, "top20_share": 0.51}
    out = long_tail.fig5_long_tail(STATS, amz)
    assert out["sparsity_ratio"] == pytest.approx(10.0)
    assert out["movielens"]["users"] == 943 and out["amazon_like"]["top20_share"] == 0.51
    v = verdicts({"fig5_long_tail": out})
    assert v["fig5_long_tail"]["held"] is True and v["fig5_amazon_sparser"]["held"] is True
    flat = long_tail.fig5_long_tail(STATS, {**amz, "top20_share": 0.45})
    assert verdicts({"fig5_long_tail": flat})["fig5_long_tail"]["held"] is False


def test_fig5_missing_field_raises_and_zero_density_is_none():
    with pytest.raises(ValueError, match="density"):
        long_tail.fig5_long_tail(STATS, {k: v for k, v in STATS.items() if k != "density"})
    out = long_tail.fig5_long_tail(STATS, {**STATS, "density": 0.0})
    assert out["sparsity_ratio"] is None
    assert verdicts({"fig5_long_tail": out})["fig5_amazon_sparser"]["held"] is None
