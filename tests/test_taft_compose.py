"""TAFT's mechanisms against brute force: composition equals
the ensemble, forgetting by subtraction equals training without the shard, the CLS-token and
cls-only paths equal the full computation, PGD projects, regimes select the right parameters."""

import numpy as np
import pytest
import torch
from torch.func import jvp

from privtrans.taft import compose
from privtrans.taft import finetune
from privtrans.taft import tangent
from privtrans.taft.vit import ViT, ViTConfig


CFG = ViTConfig(image=8, patch=4, dim=16, depth=2, heads=2, classes=5)


@pytest.fixture(scope="module")
def vit():
    torch.manual_seed(0)
    return ViT(CFG).eval().requires_grad_(False)


def feats(vit, n=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, CFG.image, CFG.image, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    return finetune.features(vit, x, cut=1), y


def randomise(model, seed, scale=0.1):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.copy_(scale * torch.randn(p.shape, generator=g))
    return finetune.trainable_state(model)


def test_composition_by_averaging_delta_equals_the_mean_of_outputs(vit):
    x, _ = feats(vit)
    spec = finetune.FitSpec("taft", tuned=1)
    states = [randomise(finetune.make_model(vit, spec, 4, init_seed=3), seed=s) for s in range(5)]
    sset = compose.ShardSet(spec, 4, 3, [np.arange(1)] * 5, states)
    per = compose.shard_logits(vit, sset, x)
    composed = compose.composed_logits(vit, sset, x)
    torch.testing.assert_close(composed, per.mean(0), rtol=0, atol=2e-5)
    # the non-linear model has no such identity: a Soup is not its ensemble
    nl = finetune.FitSpec("nlft", tuned=1, loss="ce")
    nstates = [randomise(finetune.make_model(vit, nl, 4, init_seed=3), seed=s, scale=1.0) for s in range(5)]
    nset = compose.ShardSet(nl, 4, 3, [np.arange(1)] * 5, nstates)
    assert (compose.composed_logits(vit, nset, x) - compose.shard_logits(vit, nset, x).mean(0)).abs().max() > 1e-2


def test_forgetting_by_subtraction_equals_training_without_the_shard(vit):
    x, y = feats(vit, n=30)
    spec = finetune.FitSpec("taft", tuned=1, lr=1e-2, kappa=5, epochs=3, batch=4, decay_at=(2,))
    full = compose.train_shards(vit, x, y, spec, classes=4, shards=3, seed=7)
    j = 1
    removed = compose.subtract(compose.average(full.states), 3, full.states[j])
    # train again, now without shard j's data: the other shards see exactly what they saw before
    again = [compose.train_shard(vit, x, y, full.indices[i], spec, 4, full.init_seed, compose.shard_seed(7, i))[0]
             for i in range(3) if i != j]
    want = compose.average(again)
    for k in want:
        torch.testing.assert_close(removed[k], want[k], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="at least two components"):
        compose.subtract(full.states[0], 1, full.states[0])


def test_shards_partition_the_data_and_aggregation_rules():
    parts = compose.shard_indices(103, 10, seed=1)
    allidx = np.concatenate(parts)
    assert sorted(allidx.tolist()) == list(range(103)) and {len(p) for p in parts} == {10, 11}
    with pytest.raises(ValueError, match="shards must be between 1"):
        compose.shard_indices(5, 6, 0)
    per = torch.tensor([[[0.0, 1.0, 0.0]], [[0.0, 1.0, 0.0]], [[9.0, 0.0, 0.0]]])  # (N=3, n=1, K=3)
    assert compose.aggregate(per, "vote").tolist() == [1]
    assert compose.aggregate(per, "mean_softmax").tolist() == [0]
    with pytest.raises(ValueError, match="weights must be one per model"):
        compose.average([{"a": torch.zeros(1)}], weights=[0.5])


def test_cls_only_last_block_and_linearised_cls_token_equal_the_full_computation(vit):
    torch.manual_seed(1)
    x = torch.randn(3, CFG.tokens, CFG.dim)
    blk = vit.blocks[1]
    torch.testing.assert_close(blk(x, cls_only=True), blk(x)[:, :1])
    tb = tangent.TangentBlock(blk)
    randomise(tb, seed=2)
    xd = torch.randn_like(x)
    full, part = tb(x, xd), tb(x, xd, cls_only=True)
    torch.testing.assert_close(part[0], full[0][:, :1])
    torch.testing.assert_close(part[1], full[1][:, :1])
    # CLS = T: the primal CLS becomes a fixed tiny vector, its tangent the trainable Δcls; the JVP
    # along Δcls equals torch.func.jvp of the tail with respect to the CLS entry
    tt = finetune.TangentTail(vit, tuned=1, cls=True)
    finetune.select(tt, "full")
    assert "t.cls_delta.weight" in finetune.trainable_state(tt)
    with torch.no_grad():
        tt.t.cls_delta.weight.copy_(torch.randn(CFG.dim, 1))
    f0, j = tt.t.from_features(x)
    plain = finetune.PlainTail(vit, tuned=1)
    new_cls = tt.t.new_cls.expand(3, -1, -1)

    def tail_of_cls(c):
        return plain(torch.cat([c, x[:, 1:]], dim=1))

    want0, want = jvp(tail_of_cls, (new_cls,), (tt.t.cls_delta.weight[:, 0].expand(3, 1, -1),))
    torch.testing.assert_close(f0, want0)
    # float32: the LayerNorm of a 1e-6-scale CLS entry amplifies rounding, hence rtol 1e-4
    torch.testing.assert_close(j, want, rtol=1e-4, atol=1e-4)


def test_pgd_projection_and_regime_selection(vit):
    ps = [torch.full((3,), 2.0), torch.full((1,), 2.0)]
    finetune.project(ps, radius=1.0)
    assert float(torch.sqrt(sum((p * p).sum() for p in ps))) == pytest.approx(1.0)
    tt = finetune.make_model(vit, finetune.FitSpec("taft", regime="bitfit"), 4, 0)
    names = list(finetune.trainable_state(tt))
    assert names and all(n.endswith(".bias") or n.startswith("t.head.") for n in names)
    pl = finetune.make_model(vit, finetune.FitSpec("nlft", regime="ln", loss="ce"), 4, 0)
    names = list(finetune.trainable_state(pl))
    assert names and all("norm" in n or n.startswith("head.") for n in names)
    fc = finetune.make_model(vit, finetune.FitSpec("fc", loss="ce"), 4, 0)
    assert set(finetune.trainable_state(fc)) == {"head.weight", "head.bias"}
    with pytest.raises(ValueError, match="regime must be one of"):
        finetune.FitSpec(regime="attention")


def test_pt_false_resets_the_tuned_block_and_the_head_is_new(vit):
    a = finetune.task_vit(vit, 4, tuned=1, pt=False, init_seed=0)
    b = finetune.task_vit(vit, 4, tuned=1, pt=True, init_seed=0)
    assert not torch.equal(a.blocks[1].fc1.weight, vit.blocks[1].fc1.weight)
    assert torch.equal(a.blocks[0].fc1.weight, vit.blocks[0].fc1.weight)
    assert torch.equal(b.blocks[1].fc1.weight, vit.blocks[1].fc1.weight)
    assert a.head.out_features == 4 and torch.equal(a.head.weight, b.head.weight)  # same init seed


def test_fit_lowers_the_loss_and_is_deterministic(vit):
    x, y = feats(vit, n=40)
    spec = finetune.FitSpec("taft", lr=1e-2, kappa=5, epochs=5, batch=8, decay_at=(4,))
    r1 = finetune.fit(finetune.make_model(vit, spec, 4, 0), x, y, spec, seed=3)
    r2 = finetune.fit(finetune.make_model(vit, spec, 4, 0), x, y, spec, seed=3)
    assert r1.history[-1] < r1.history[0]
    for k in r1.state:
        assert torch.equal(r1.state[k], r2.state[k])


def test_the_weight_change_curve_equals_averaging_from_scratch():
    from privtrans.taft.compose import average, mean_change_curve

    g = torch.Generator().manual_seed(0)
    states = [{"a": torch.randn(3, 4, generator=g), "b": torch.randn(5, generator=g)} for _ in range(7)]
    want = []
    for n in range(1, 7):
        new, old = average(states[:n + 1]), average(states[:n])
        want.append(float(torch.sqrt(sum(((new[k] - old[k]) ** 2).sum() for k in new))))
    assert mean_change_curve(states) == pytest.approx(want, rel=1e-5)
    with pytest.raises(ValueError, match="at least two"):
        mean_change_curve(states[:1])
