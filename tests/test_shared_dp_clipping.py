"""shared.dp.clipping: per-sample clip factors."""

import pytest
import torch

from privtrans.shared.dp.clipping import CLIPPING_MODES, clip_factors


def test_clip_factors_bound_every_clipped_norm():
    norms = torch.tensor([0.0, 0.5, 1.0, 3.0, 100.0])
    for mode in CLIPPING_MODES:
        c = clip_factors(norms, 2.0, mode)
        assert bool(((c * norms) <= 2.0 + 1e-9).all()), mode
    # Abadi leaves small gradients alone and scales big ones to the bound; automatic always normalises
    abadi = clip_factors(norms, 2.0, "abadi")
    assert abadi[:3].tolist() == [1.0, 1.0, 1.0] and float(abadi[3] * 3.0) == pytest.approx(2.0, rel=1e-5)
    auto = clip_factors(norms, 1.0, "automatic", gamma=0.01)
    assert auto.tolist() == pytest.approx([1 / 0.01, 1 / 0.51, 1 / 1.01, 1 / 3.01, 1 / 100.01])


def test_clip_factors_refuse_bad_settings():
    with pytest.raises(ValueError, match="max_grad_norm"):
        clip_factors(torch.ones(2), 0.0)
    with pytest.raises(ValueError, match="gamma"):
        clip_factors(torch.ones(2), 1.0, "automatic", gamma=0.0)
    with pytest.raises(ValueError, match="one of"):
        clip_factors(torch.ones(2), 1.0, "flat")
