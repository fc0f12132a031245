"""privtrans.dp_icl.readouts.theorem51 on small hand-made inputs (no Monte Carlo): the recorded values and
the verdicts data/dp_icl/claims.yaml gives on them"""

from __future__ import annotations

import math

import pytest

from privtrans.dp_icl.readouts import theorem51

from dp_icl_readout_inputs import fig4_base, judged_not_held, theorem_runs, theorem_values, verdicts


def test_theorem51_conditions_by_hand():
    from privtrans.dp_icl import constants

    hp = constants.robustness(5000, 500, 5, 0.1)
    c = theorem51.theorem51_conditions(hp, 160, 1.0)
    assert c["lam_over_C2_per_L"] == pytest.approx(0.1 * 500 / hp.C**2) and c["lam_over_C2_per_L"] > 1
    assert c["alpha2_mu4_over_NLlam"] == pytest.approx(160**2 / (5000 * 500 * 0.1))
    assert c["upper_bound_slack"] == pytest.approx(5000 * 500 * 0.1 / 160**2)
    lower = hp.C**2 / math.sqrt(500) * max(1, 0.1 * 5000 * hp.R**2 / math.sqrt(500))
    assert c["lower_bound_slack"] == pytest.approx(160**2 / lower)
    assert c["kappa_over_N_exp_minus_D2"] == pytest.approx(math.exp(25) / 5000)
    assert c["inside"] is True
    assert theorem51.theorem51_conditions(hp, 40, 1.0)["inside"] is False          # below (5.2)'s lower bound
    assert theorem51.theorem51_conditions(hp, 1000, 1.0)["inside"] is False        # above its upper bound
    assert theorem51.theorem51_conditions(hp.with_(lam=0.01), 160, 1.0)["inside"] is False   # lam < C^2 / L
    assert theorem51.theorem51_conditions(hp.with_(D=2), 160, 1.0)["inside"] is False        # kappa < N e^-D^2
    assert theorem51.theorem51_conditions(hp.with_(D=40), 160, 1.0)["kappa_over_N_exp_minus_D2"] > 1  # no overflow


def test_fig4_theorem_region_by_hand():
    out = theorem_values(theorem_runs(lambda a: 1e-4 * (1 + a / 100)))
    assert out["theorem_inside_alphas"] == [80.0, 160.0] and out["theorem_inside_count"] == 2
    assert set(out["theorem_ridge_minus_noisyhead_inside"]) == {"80", "160"}
    assert out["theorem_ridge_growth_inside"]["mean"] == pytest.approx(1e-4 * 0.8)
    assert out["theorem_ridge_growth"]["mean"] == pytest.approx(1e-4 * 1.5)
    assert out["theorem_lam_ratio"] > 1 > out["paper_lam_ratio"]
    assert out["theorem_alpha_ratio_max"] == pytest.approx(160**2 / (5000 * 500 * 0.1))
    assert out["paper_alpha_ratio"] > 1 and out["paper_lower_slack"] > 1 and out["paper_kappa_ratio"] > 1
    assert out["paper_conditions"]["inside"] is False
    v = verdicts({"fig4_robustness": {**fig4_base(), **out}})
    for cid in ("fig4_theorem_noisyhead_beats_ridge", "fig4_theorem_ridge_grows", "fig4_paper_setting_outside_theorem"):
        assert v[cid]["verdict"] == "held", (cid, v[cid]["reason"])


def test_fig4_theorem_region_contradicted_when_noisyhead_is_not_below_or_ridge_flat():
    worse = theorem_values(theorem_runs(lambda a: 1e-4, dp=2e-4))
    v = verdicts({"fig4_robustness": {**fig4_base(), **worse}})
    assert v["fig4_theorem_noisyhead_beats_ridge"]["verdict"] == "contradicted"
    assert v["fig4_theorem_ridge_grows"]["verdict"] == "not judged"         # flat: a tie decides nothing
    with pytest.raises(ValueError, match="alpha = 160"):
        df = theorem_runs(lambda a: 1e-4)
        theorem_values(df[df.alpha != 160])


def test_fig4_theorem_region_null_is_judged_and_never_held():
    for seed in range(5):
        out = theorem_values(theorem_runs(lambda a: 1e-4, dp=1e-4, reps=6, jitter=0.0, noise=0.3, seed=seed))
        v = verdicts({"fig4_robustness": {**fig4_base(), **out}})
        assert judged_not_held(v["fig4_theorem_noisyhead_beats_ridge"]), seed
        assert judged_not_held(v["fig4_theorem_ridge_grows"]), seed


def test_fig4_theorem_claims_not_judged_outside_the_region():
    """No alpha satisfies (5.2)'s lower bound: the theorem's claims are not judged, the check fails."""
    out = theorem_values(theorem_runs(lambda a: 1e-4 * (1 + a / 100), alphas=(10, 20)), alphas=(10, 20))
    assert out["theorem_inside_count"] == 0 and out["theorem_ridge_minus_noisyhead_inside"] is None
    v = verdicts({"fig4_robustness": {**fig4_base(), **out}})
    assert v["fig4_theorem_noisyhead_beats_ridge"]["verdict"] == "not judged"
    assert v["fig4_theorem_ridge_grows"]["verdict"] == "not judged"
    assert v["fig4_paper_setting_outside_theorem"]["verdict"] == "contradicted"
