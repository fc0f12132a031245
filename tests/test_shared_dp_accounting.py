"""shared.dp.accounting: every ε and σ is what opacus' own accountants give when called directly
(stepped one step at a time, as a training loop does), and q = 1 matches the closed-form RDP of
the Gaussian mechanism; bad settings are refused with the allowed values in the message."""

import warnings

import numpy as np
import pytest
from opacus.accountants import PRVAccountant, RDPAccountant
from opacus.accountants.utils import get_noise_multiplier

from privtrans.shared.dp import accounting

# opacus' default RDP orders, written out here so that the q = 1 check below does not read them
# from the code it checks
DEFAULT_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))


def _stepped(accountant_cls, sigma, q, steps, delta, **kw):
    """opacus' accountant used as a training loop uses it: one ``step`` per batch."""
    acc = accountant_cls()
    for _ in range(steps):
        acc.step(noise_multiplier=sigma, sample_rate=q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return acc.get_epsilon(delta=delta, **kw)


def _gaussian_rdp_epsilon(sigma, steps, delta, orders):
    """Full-batch Gaussian: RDP T α / (2σ²), converted to (ε, δ) by Balle et al.'s Theorem 21."""
    a = np.asarray(orders, dtype=float)
    rdp = steps * a / (2 * sigma ** 2)
    return float(np.min(rdp - (np.log(delta) + np.log(a)) / (a - 1) + np.log((a - 1) / a)))


@pytest.mark.parametrize("sigma,q,steps", [(1.1, 0.01, 50), (0.8, 0.2, 7), (2.5, 0.05, 120)])
def test_rdp_epsilon_equals_opacus_stepped_accountant(sigma, q, steps):
    delta = 1e-5
    want = _stepped(RDPAccountant, sigma, q, steps, delta)
    assert accounting.opacus_epsilon(sigma, q, steps, delta) == pytest.approx(want, rel=1e-12)
    assert accounting.epsilon_spent(sigma, q, steps, delta) == pytest.approx(want, rel=1e-12)


def test_prv_epsilon_equals_opacus_stepped_accountant():
    sigma, q, steps, delta = 1.0, 0.02, 40, 1e-5
    for eps_error in (0.01, 0.1):
        want = _stepped(PRVAccountant, sigma, q, steps, delta, eps_error=eps_error)
        got = accounting.opacus_epsilon(sigma, q, steps, delta, accountant="prv", eps_error=eps_error)
        assert got == pytest.approx(want, rel=1e-9)
    # PRV is tighter than RDP for the same mechanism (and the two are really different accountants)
    rdp = accounting.opacus_epsilon(sigma, q, steps, delta)
    assert got < rdp


def test_full_batch_epsilon_is_the_closed_form_gaussian_rdp():
    """q = 1 (DP-ICL, TAFT): ε = min_α [T α/(2σ²) + log((α-1)/α) - (log δ + log α)/(α-1)]."""
    for sigma, steps, delta in [(3.0, 1, 1e-5), (10.0, 20, 1e-6)]:
        want = _gaussian_rdp_epsilon(sigma, steps, delta, DEFAULT_ORDERS)
        got = accounting.opacus_epsilon(sigma, 1.0, steps, delta)
        assert got == pytest.approx(want, rel=1e-10)


def test_custom_orders_are_passed_to_opacus():
    """With ``alphas`` the minimum is over those orders only (DP-ICL passes orders up to 1e6)."""
    sigma, delta = 3.0, 1e-5
    orders = [2.0, 4.0, 8.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # opacus' "optimal order is the largest alpha" stays silenced
        got = accounting.opacus_epsilon(sigma, 1.0, 1, delta, alphas=orders)
    assert got == pytest.approx(_gaussian_rdp_epsilon(sigma, 1, delta, orders), rel=1e-10)
    assert got > accounting.opacus_epsilon(sigma, 1.0, 1, delta) + 0.1  # coarser orders: a looser ε
    sub = accounting.opacus_epsilon(1.0, 0.05, 30, 1e-5, alphas=np.array(orders))  # any iterable of orders
    assert sub == pytest.approx(_stepped(RDPAccountant, 1.0, 0.05, 30, 1e-5, alphas=orders), rel=1e-12)


def test_noise_multiplier_equals_opacus_search():
    target, delta, q, steps, tol = 2.0, 1e-5, 0.02, 60, 0.02
    got = accounting.opacus_noise_multiplier(target, delta, q, steps, epsilon_tolerance=tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = get_noise_multiplier(target_epsilon=target, target_delta=delta, sample_rate=q, steps=steps,
                                    epsilon_tolerance=tol)
    assert got == pytest.approx(want, rel=1e-12)
    # and it meets the target from below, within the search tolerance
    assert target - tol <= _stepped(RDPAccountant, got, q, steps, delta) <= target


def test_prv_noise_multiplier_searches_with_prv_and_meets_the_target(monkeypatch):
    """The search runs on opacus' PRV accountant with the caller's eps_error (one search, spied)."""
    target, delta, q, steps, tol = 2.0, 1e-5, 0.02, 60, 0.02
    calls = []

    def spy(**kw):
        calls.append(kw)
        return get_noise_multiplier(**kw)

    monkeypatch.setattr(accounting, "get_noise_multiplier", spy)
    got = accounting.opacus_noise_multiplier(target, delta, q, steps, accountant="prv", epsilon_tolerance=tol,
                                    eps_error=0.05)
    assert calls == [dict(target_epsilon=target, target_delta=delta, sample_rate=q, steps=steps,
                          accountant="prv", epsilon_tolerance=tol, eps_error=0.05)]
    assert target - tol <= _stepped(PRVAccountant, got, q, steps, delta, eps_error=0.05) <= target


def test_default_delta_is_one_over_twice_n():
    assert accounting.default_delta(1) == 0.5
    assert accounting.default_delta(943) == pytest.approx(1 / 1886)
    with pytest.raises(ValueError, match="n_train must be >= 1"):
        accounting.default_delta(0)


def test_noise_for_epsilon_states_the_run_as_dpformer_does(monkeypatch):
    """q = B/N, T = round(epochs / q), δ = 1/(2N), σ from opacus' RDP search, ε of that σ recomputed."""
    calls = []
    monkeypatch.setattr(accounting, "get_noise_multiplier", lambda **kw: calls.append(kw) or get_noise_multiplier(**kw))
    b = accounting.noise_for_epsilon(3.0, n_train=1000, batch_size=50, epochs=2)
    assert (b.sample_rate, b.steps, b.delta, b.accountant) == (0.05, 40, 1 / 2000, "rdp")
    assert calls == [dict(target_epsilon=3.0, target_delta=1 / 2000, sample_rate=0.05, steps=40,
                          accountant="rdp", epsilon_tolerance=0.01)]
    assert b.epsilon == pytest.approx(_stepped(RDPAccountant, b.noise_multiplier, 0.05, 40, 1 / 2000), rel=1e-12)
    assert 3.0 - 0.01 <= b.epsilon <= 3.0


def test_noise_for_epsilon_rounds_steps_and_keeps_an_explicit_delta(monkeypatch):
    """What reaches the σ search: T rounded (0.5 / 0.3 = 1.67 -> 2), at least 1; δ as given."""
    asked = []
    monkeypatch.setattr(accounting, "opacus_noise_multiplier", lambda *a: asked.append(a) or 1.5)
    b = accounting.noise_for_epsilon(3.0, n_train=1000, batch_size=300, epochs=0.5)
    assert asked[-1] == (3.0, 1 / 2000, 0.3, 2) and (b.steps, b.noise_multiplier) == (2, 1.5)
    assert b.epsilon == pytest.approx(_stepped(RDPAccountant, 1.5, 0.3, 2, 1 / 2000), rel=1e-12)
    tiny = accounting.noise_for_epsilon(3.0, n_train=1000, batch_size=10, epochs=1e-4, delta=1e-6)
    assert asked[-1] == (3.0, 1e-6, 0.01, 1) and (tiny.steps, tiny.delta) == (1, 1e-6)


def test_budget_prints_what_every_dp_result_states():
    b = accounting.Budget(epsilon=2.9987, delta=5e-4, noise_multiplier=1.23456, sample_rate=0.05, steps=40)
    assert str(b) == "(ε = 3, δ = 0.0005) via RDP; σ = 1.235, q = 0.05, 40 steps"
    with pytest.raises(AttributeError):  # frozen: a stated budget cannot be edited afterwards
        b.epsilon = 1.0


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match=r"unknown opacus accountant 'gdp'; choose from \('rdp', 'prv'\)"):
        accounting.opacus_epsilon(1.0, 0.1, 10, 1e-5, accountant="gdp")
    with pytest.raises(ValueError, match=r"choose from \('rdp', 'prv'\)"):
        accounting.opacus_noise_multiplier(1.0, 1e-5, 0.1, 10, accountant="RDP")
    with pytest.raises(ValueError, match="target_epsilon must be > 0"):
        accounting.noise_for_epsilon(0.0, n_train=100, batch_size=10, epochs=1)
    for bs in (0, 101):
        with pytest.raises(ValueError, match="0 < batch_size <= n_train"):
            accounting.noise_for_epsilon(1.0, n_train=100, batch_size=bs, epochs=1)


def test_an_argument_the_accountant_does_not_take_is_refused_not_ignored():
    """``alphas`` are RDP orders and ``eps_error`` is PRV's: given to the other accountant they used
    to vanish into opacus' **kwargs (the ε silently that of the defaults). Refused, by name, with
    the allowed combination; opacus_noise_multiplier shares the rule."""
    rdp_only = r"alphas is an argument of the RDP accountant only, not of accountant='prv'"
    prv_only = r"eps_error is an argument of the PRV accountant only, not of accountant='rdp'"
    allowed = r"pass alphas with accountant='rdp', eps_error with accountant='prv'"
    for alphas in ([2.0, 4.0, 8.0], np.array([2.0, 4.0]), []):
        with pytest.raises(ValueError, match=f"^{rdp_only}: {allowed}$"):
            accounting.opacus_epsilon(1.0, 0.02, 40, 1e-5, accountant="prv", alphas=alphas)
        with pytest.raises(ValueError, match=rdp_only):
            accounting.opacus_noise_multiplier(2.0, 1e-5, 0.02, 60, accountant="prv", alphas=alphas)
    for eps_error in (0.1, 0.0):
        with pytest.raises(ValueError, match=f"^{prv_only}: {allowed}$"):
            accounting.opacus_epsilon(1.0, 0.02, 40, 1e-5, eps_error=eps_error)
        with pytest.raises(ValueError, match=prv_only):
            accounting.opacus_noise_multiplier(2.0, 1e-5, 0.02, 60, accountant="rdp", eps_error=eps_error)
    # the arguments each accountant does take, and None for the other, still give opacus' own ε
    sigma, q, steps, delta = 1.0, 0.02, 40, 1e-5
    assert accounting.opacus_epsilon(sigma, q, steps, delta, accountant="prv", alphas=None, eps_error=0.05) == \
        pytest.approx(_stepped(PRVAccountant, sigma, q, steps, delta, eps_error=0.05), rel=1e-9)
    assert accounting.opacus_epsilon(sigma, q, steps, delta, accountant="rdp", alphas=[2.0, 4.0, 8.0], eps_error=None) == \
        pytest.approx(_stepped(RDPAccountant, sigma, q, steps, delta, alphas=[2.0, 4.0, 8.0]), rel=1e-12)
