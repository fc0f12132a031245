"""k seeds trained together (privtrans.shared.seeds_together) equal k runs trained apart."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from privtrans.shared import seeds_together


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


def apart(x, y, epochs=3, batch=8):
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
                opt.step()
        out.append(m)
    return out


def together(x, y, epochs=3, batch=8):
    st = seeds_together.Stack([make(s) for s in SEEDS])
    opt = torch.optim.AdamW(st.parameters(), lr=1e-2, weight_decay=0.01)
    for ep in range(epochs):
        for idx in seeds_together.StackedBatches(perms(SEEDS, len(y), ep), batch):
            out = st(x[idx])
            loss = sum(F.cross_entropy(out[i], y[idx[i]]) for i in range(st.k))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return st.write_back()


def assert_models_close(a, b, atol=1e-5):
    for ma, mb in zip(a, b):
        for (n, pa), (_, pb) in zip(ma.named_parameters(), mb.named_parameters()):
            torch.testing.assert_close(pa, pb, atol=atol, rtol=1e-4, msg=n)


def test_adamw_together_equals_runs_apart():
    x, y = data()
    a, b = apart(x, y), together(x, y)
    assert_models_close(a, b)
    # and the seeds did move apart from one another (the test is not vacuous)
    assert not torch.allclose(b[0].head.weight, b[1].head.weight)


def test_stacked_batches_know_their_count_and_keep_each_seeds_order():
    perms = [torch.randperm(10, generator=torch.Generator().manual_seed(s)) for s in (0, 1)]
    b = seeds_together.StackedBatches(perms, 4)
    got = list(b)
    assert len(b) == len(got) == 3 and [g.shape[1] for g in got] == [4, 4, 2]
    for i, p in enumerate(perms):
        assert torch.equal(torch.cat([g[i] for g in got]), p)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="one class"):
        seeds_together.Stack([Net(), nn.Linear(2, 2)])
    with pytest.raises(ValueError, match="same parameter"):
        seeds_together.Stack([Net(h=8), Net(h=9)])
    with pytest.raises(ValueError, match="one length"):
        seeds_together.StackedBatches([torch.arange(3), torch.arange(4)], 2)


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
    st = seeds_together.Stack([tied(s) for s in SEEDS])
    assert st.base.out.weight is st.base.emb.weight
    opt = torch.optim.Adam(st.parameters(), lr=1e-2)
    for _ in range(3):
        opt.zero_grad()
        out = st(ids)
        sum(F.cross_entropy(out[i], y[i]) for i in range(3)).backward()
        opt.step()
    assert_models_close(ref, st.write_back())
