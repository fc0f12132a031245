"""k seeds trained together (privtrans.shared.seeds_together) equal k runs trained apart."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from privtrans.shared import seeds_together as T
from privtrans.shared.dp.step import make_dp_step


class Net(nn.Module):
    def __init__(self, d=6, h=8, c=3):
        super().__init__()
        self.emb = nn.Linear(d, h)
        self.norm = nn.LayerNorm(h)
        self.head = nn.Linear(h, c)

    def forward(self, x):
        return self.head(self.norm(torch.tanh(self.emb(x))))


def make(seed):
    torch.manual_seed(seed)
    return Net()


def data(n=40, d=6, c=3):
    g = torch.Generator().manual_seed(123)
    return torch.randn(n, d, generator=g), torch.randint(0, c, (n,), generator=g)


def perms(seeds, n, epoch):
    return [torch.randperm(n, generator=torch.Generator().manual_seed(1000 * s + epoch)) for s in seeds]


SEEDS = [0, 1, 2]


def apart(x, y, epochs=3, batch=8, clip=0.5):
    out = []
    for s in SEEDS:
        m = make(s)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.01)
        for ep in range(epochs):
            (p,) = perms([s], len(y), ep)
            for i in range(0, len(y), batch):
                idx = p[i:i + batch]
                loss = F.cross_entropy(m(x[idx]), y[idx])
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
                opt.step()
        out.append(m)
    return out


def together(x, y, epochs=3, batch=8, clip=0.5):
    st = T.Stack([make(s) for s in SEEDS])
    opt = torch.optim.AdamW(st.parameters(), lr=1e-2, weight_decay=0.01)
    for ep in range(epochs):
        for idx in T.StackedBatches(perms(SEEDS, len(y), ep), batch):
            out = st(x[idx])
            loss = sum(F.cross_entropy(out[i], y[idx[i]]) for i in range(st.k))
            opt.zero_grad()
            loss.backward()
            T.clip_grad_norm_per_seed(st.parameters(), clip)
            opt.step()
    return st.write_back()


def assert_models_close(a, b, atol=1e-5):
    for ma, mb in zip(a, b):
        for (n, pa), (_, pb) in zip(ma.named_parameters(), mb.named_parameters()):
            torch.testing.assert_close(pa, pb, atol=atol, rtol=1e-4, msg=n)


def test_adamw_with_per_seed_clip_equals_runs_apart():
    x, y = data()
    a, b = apart(x, y), together(x, y)
    assert_models_close(a, b)
    # and the seeds did move apart from one another (the test is not vacuous)
    assert not torch.allclose(b[0].head.weight, b[1].head.weight)


def test_a_shared_clip_would_break_equality():
    """The clip must be per seed: clipping the stack's global norm differs from the runs apart."""
    x, y = data()
    st = T.Stack([make(s) for s in SEEDS])
    out = st(x[:8].expand(3, 8, 6))
    sum(F.cross_entropy(out[i], y[:8]) for i in range(3)).backward()
    per_seed = [p.grad.clone() for p in st.parameters()]
    T.clip_grad_norm_per_seed(st.parameters(), 0.1)
    norms = torch.sqrt(sum(p.grad.flatten(1).pow(2).sum(1) for p in st.parameters()))
    torch.testing.assert_close(norms, torch.full((3,), 0.1), atol=1e-5, rtol=0)
    assert any(not torch.allclose(g, p.grad) for g, p in zip(per_seed, st.parameters()))


def per_sample_ce(out, y):
    return F.cross_entropy(out, y, reduction="none")


@pytest.mark.parametrize("engine", ["phantom", "opacus"])
def test_dp_step_equals_runs_apart(engine):
    """Per-sample clipping (automatic, C = 1) and Gaussian noise from each seed's own generator."""
    x, y = data()
    kw = dict(noise_multiplier=0.7, expected_batch_size=8, max_grad_norm=1.0, clipping="automatic")
    ref = []
    for s in SEEDS:
        m = make(s)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        step = make_dp_step(engine, m, per_sample_ce, generator=torch.Generator().manual_seed(s), **kw)
        (p,) = perms([s], len(y), 0)
        for i in range(0, 24, 8):
            idx = p[i:i + 8]
            opt.zero_grad()
            step(x[idx], y[idx])
            opt.step()
        ref.append(m)
    st = T.Stack([make(s) for s in SEEDS])
    opt = torch.optim.SGD(st.parameters(), lr=0.1)
    gens = [torch.Generator().manual_seed(s) for s in SEEDS]
    for idx in list(T.StackedBatches(perms(SEEDS, len(y), 0), 8))[:3]:
        st.zero_grad()
        norms = T.dp_gradient(st, per_sample_ce, x[idx], y[idx], generators=gens, **kw)
        assert norms.shape == (3, 8)
        opt.step()
    assert_models_close(ref, st.write_back())


def test_padded_examples_do_not_count():
    """Poisson batches of different sizes: a padded example (present = 0) changes nothing."""
    x, y = data()
    kw = dict(noise_multiplier=0.0, expected_batch_size=4, max_grad_norm=1.0, clipping="abadi")
    st = T.Stack([make(s) for s in SEEDS])
    idx = torch.arange(12).view(3, 4)
    T.dp_gradient(st, per_sample_ce, x[idx], y[idx], generators=[None] * 3, **kw)
    g1 = [p.grad.clone() for p in st.parameters()]
    st.zero_grad()
    pad = torch.cat([idx, torch.full((3, 2), 30)], 1)
    present = torch.cat([torch.ones(3, 4), torch.zeros(3, 2)], 1)
    norms = T.dp_gradient(st, per_sample_ce, x[pad], y[pad], generators=[None] * 3, present=present, **kw)
    for a, p in zip(g1, st.parameters()):
        torch.testing.assert_close(a, p.grad)
    assert (norms[:, 4:] == 0).all()


def test_stacked_batches_know_their_count_and_keep_each_seeds_order():
    perms = [torch.randperm(10, generator=torch.Generator().manual_seed(s)) for s in (0, 1)]
    b = T.StackedBatches(perms, 4)
    got = list(b)
    assert len(b) == len(got) == 3 and [g.shape[1] for g in got] == [4, 4, 2]
    for i, p in enumerate(perms):
        assert torch.equal(torch.cat([g[i] for g in got]), p)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="one class"):
        T.Stack([Net(), nn.Linear(2, 2)])
    with pytest.raises(ValueError, match="same parameter"):
        T.Stack([Net(h=8), Net(h=9)])
    st = T.Stack([make(0), make(1)])
    with pytest.raises(ValueError, match="one generator per seed"):
        T.dp_gradient(st, per_sample_ce, torch.zeros(2, 1, 6), torch.zeros(2, 1, dtype=torch.long),
                      generators=[None], noise_multiplier=1.0, expected_batch_size=1, max_grad_norm=1.0)
    with pytest.raises(ValueError, match="one length"):
        T.StackedBatches([torch.arange(3), torch.arange(4)], 2)


class Tied(nn.Module):
    """An embedding shared with the output layer (SASRec's item embedding)."""

    def __init__(self, v=7, d=5):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.mix = nn.Linear(d, d)
        self.out = nn.Linear(d, v, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, ids):
        return self.out(torch.tanh(self.mix(self.emb(ids))))


def test_a_tied_model_keeps_its_tie_apart_and_together():
    def tied(seed):
        torch.manual_seed(seed)
        return Tied()

    ids, y = torch.randint(0, 7, (3, 6)), torch.randint(0, 7, (3, 6))
    ref = []
    for i, s in enumerate(SEEDS):
        m = tied(s)
        opt = torch.optim.Adam(m.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(m(ids[i]), y[i]).backward()
            opt.step()
        ref.append(m)
    st = T.Stack([tied(s) for s in SEEDS])
    assert st.base.out.weight is st.base.emb.weight
    opt = torch.optim.Adam(st.parameters(), lr=1e-2)
    for _ in range(3):
        opt.zero_grad()
        out = st(ids)
        sum(F.cross_entropy(out[i], y[i]) for i in range(3)).backward()
        opt.step()
    assert_models_close(ref, st.write_back())
    # the DP step too: per-sample gradients of the tied weight sum both uses
    kw = dict(noise_multiplier=0.5, expected_batch_size=6, max_grad_norm=1.0, clipping="automatic")
    gens = [torch.Generator().manual_seed(s) for s in SEEDS]
    apart = []
    for i, s in enumerate(SEEDS):
        m = tied(s)
        step = make_dp_step("opacus", m, per_sample_ce, generator=torch.Generator().manual_seed(s), **kw)
        step(ids[i], y[i])
        apart.append([p.grad.clone() for p in m.parameters()])
    st = T.Stack([tied(s) for s in SEEDS])
    T.dp_gradient(st, per_sample_ce, ids, y, generators=gens, **kw)
    for i in range(3):
        for g, p in zip(apart[i], st.parameters()):
            torch.testing.assert_close(g, p.grad[i], atol=1e-5, rtol=1e-4)
