"""privtrans.dp_icl.accounting: basic composition bounds the tight accountants, RDP equals opacus' and its
closed form, and the noise multiplier inverts epsilon."""

from __future__ import annotations

import numpy as np
import pytest

from privtrans.dp_icl import accounting


# ----------------------------------------------------------------------------- accounting
@pytest.mark.parametrize("eps,T", [(0.2, 44), (1.0, 39), (0.05, 5)])
def test_basic_composition_bounds_the_tight_accountants(eps, T):
    delta = 1e-5
    z = accounting.paper_noise_multiplier(eps, delta, T)
    assert accounting.basic_epsilon(z, T, delta) == pytest.approx(eps)
    tight = {a: accounting.epsilon(a, z, T, delta) for a in ("zcdp", "rdp", "prv", "exact")}
    assert all(v <= eps for v in tight.values()), tight
    assert tight["prv"] < eps / 3                     # the paper's accounting is loose (~10x at T ~ 40)
    # PRV is an upper bound that sits just above the exact value
    assert tight["exact"] * (1 - 1e-6) <= tight["prv"] <= tight["exact"] * 1.05


def test_subsampled_rdp_equals_opacus_accountant():
    """q < 1 uses opacus's orders: this case gave 1.7253 on an integer-heavy grid of orders."""
    from opacus.accountants import RDPAccountant

    acc = RDPAccountant()
    acc.history = [(1.1, 0.01, 1000)]
    want = acc.get_epsilon(delta=1e-5)
    assert abs(want - 1.7118) < 5e-4
    assert accounting.rdp_epsilon(1.1, 1000, 1e-5, q=0.01) == pytest.approx(want, rel=1e-9)


def test_the_chapter_imports_without_torch_or_opacus():
    """Most of the chapter's notebooks use only the basic, zCDP and exact accountants: importing what they
    import must not cost torch and opacus (about 4 s per notebook kernel); rdp / prv import opacus when called."""
    import subprocess
    import sys

    code = ("import sys; import privtrans.dp_icl, privtrans.dp_icl.readouts, privtrans.dp_icl.plots; "
            "from privtrans.book import session, plotting; "
            "from privtrans.dp_icl import accounting; accounting.noise_multiplier('zcdp', 1.0, 1e-5, 100); "
            "print(sorted(m for m in ('torch', 'opacus') if m in sys.modules)); "
            "accounting.rdp_epsilon(1.1, 10, 1e-5); print(sorted(m for m in ('torch', 'opacus') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "['opacus', 'torch']"], out


def test_rdp_matches_the_closed_form_for_full_batch():
    """For q = 1, opacus' RDP of T Gaussian steps is T alpha / (2 z^2) at every order."""
    from opacus.accountants.analysis.rdp import compute_rdp

    z, T = 37.0, 12
    orders = [2.0, 10.0, 1000.0]
    np.testing.assert_allclose(compute_rdp(q=1.0, noise_multiplier=z, steps=T, orders=orders),
                               [T * a / (2 * z * z) for a in orders], rtol=1e-12)


def test_noise_multiplier_inverts_epsilon():
    for a in ("zcdp", "exact", "rdp"):
        z = accounting.noise_multiplier(a, 0.3, 1e-5, 20)
        assert accounting.epsilon(a, z, 20, 1e-5) == pytest.approx(0.3, rel=0.01)
    assert accounting.noise_multiplier("basic", 0.3, 1e-5, 20) == accounting.paper_noise_multiplier(0.3, 1e-5, 20)
    with pytest.raises(ValueError):
        accounting.epsilon("gdp", 1.0, 1, 1e-5)
