"""privtrans.dp_icl.constants: the figures' hyper-parameters as the authors' code sets them."""

from __future__ import annotations

import pytest

from privtrans.dp_icl import constants


# ----------------------------------------------------------------------------- constants
def test_low_dim_constants_match_the_authors_table():
    # the authors' code's constants (dp_icl/constants.py): N, L, C, G, R, sigma, eta0, T
    for N, L, C, G, R, sigma, eta0, T in [(1000, 31, 4.548, 1.409, 23.49, 106.11, 0.0649, 44),
                                          (4000, 63, 4.987, 1.105, 39.64, 107.87, 0.0818, 39)]:
        hp = constants.low_dim(N)
        assert (hp.L, hp.T) == (L, T)
        for got, want in ((hp.C, C), (hp.G, G), (hp.R, R), (hp.sigma, sigma), (hp.eta0, eta0)):
            assert got == pytest.approx(want, rel=2e-3)
    hp = constants.over_param(1000)
    assert (hp.G, hp.R, hp.sigma) == pytest.approx((1.055, 3.642, 17.70), rel=2e-3)
    hp = constants.robustness()
    assert (hp.R, hp.eta0, hp.T, hp.sigma) == pytest.approx((9.317, 0.178, 8, 8.07), rel=3e-3)


@pytest.mark.parametrize("profile", ["smoke", "ci", "paper"])
def test_figure6_fixed_setting_is_figure3s_constants(profile):
    """Figure 6's second setting is Figure 3's, as stated before any run: lam = N / D, eta0 =
    0.02 lam / (3 (lam + G^2)^2), and Figure 3's eps and delta, at every profile."""
    from privtrans.book import profiles

    cfg = profiles.settings("dp_icl", "fig6_news_text", profile)
    fig3 = profiles.settings("dp_icl", "fig3_early_stopping", profile)
    fx = cfg["fixed"]
    assert fx["lam"] == pytest.approx(cfg["n_train"] / cfg["D"])
    hp = constants.text(cfg["n_train"], cfg["L"], cfg["D"], fx["lam"], fx["step_factor"])
    ref = constants.over_param(fig3["N"])
    for h in (hp, ref):  # the same step-size rule as Figure 3's constants
        assert h.eta0 == pytest.approx(0.02 * h.lam / (3 * (h.lam + h.G**2) ** 2))
    assert (fx["eps"], fx["delta"]) == (fig3["eps"], fig3["delta"])
