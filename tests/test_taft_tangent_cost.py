"""Table 8's cost measurement (privtrans.taft.tangent_cost): NLFT and TAFT tune the same weights (the same
count, a closed form of the width), start equal, and are fed from the same cut; a train step trains
the tail and only the tail, inference trains nothing; feeding from images runs the frozen part on
every call, feeding from the cache never; the time per example is the median of the timed calls over
the batch, and the table has one row per (batch, feed, phase, method) in that order.

Times are read from a fake clock (``cost.time``), so every number asserted here is exact: no
wall-clock time is tested."""

import types

import pytest
import torch

from privtrans.taft import tangent_cost
from privtrans.taft import finetune
from privtrans.taft.vit import ViT, ViTConfig

CFG = ViTConfig(image=8, patch=4, dim=16, depth=3, heads=2, classes=5)
CLASSES = 3


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def vit():
    torch.manual_seed(0)
    return ViT(CFG).eval().requires_grad_(False)


def batch(n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, CFG.image, CFG.image, generator=g), torch.randint(0, CLASSES, (n,), generator=g)


class FakeClock:
    """``perf_counter`` that advances ``tick`` seconds per reading (binary fractions: exact sums), or
    returns the readings it is given."""

    def __init__(self, tick=0.25, readings=None):
        self.t, self.tick, self.readings, self.calls = 0.0, tick, list(readings or []), 0

    def perf_counter(self):
        self.calls += 1
        if self.readings:
            return self.readings.pop(0)
        self.t += self.tick
        return self.t


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(tangent_cost, "time", types.SimpleNamespace(perf_counter=c.perf_counter))
    return c


@pytest.fixture
def feature_calls(monkeypatch):
    """Every call of the frozen part: (number of images, cut)."""
    calls = []
    real = tangent_cost.features
    monkeypatch.setattr(tangent_cost, "features", lambda v, images, cut: calls.append((len(images), cut)) or real(v, images, cut))
    return calls


def n_tuned_weights(d, tuned, classes, mlp=4):
    """Weights of ``tuned`` pre-norm blocks (qkv, proj, fc1, fc2 with biases; two LayerNorms), the final
    LayerNorm and the head."""
    block = (d * 3 * d + 3 * d) + (d * d + d) + (d * mlp * d + mlp * d) + (mlp * d * d + d) + 2 * (2 * d)
    return tuned * block + 2 * d + (d * classes + classes)


@pytest.mark.parametrize("tuned", [1, 2])
def test_both_tails_tune_the_same_weights_from_the_same_cut_and_start_equal(vit, tuned):
    tails = tangent_cost.tails(vit, CLASSES, tuned)
    assert list(tails) == list(tangent_cost.METHODS) == ["NLFT", "TAFT"]
    nlft, taft = tails["NLFT"], tails["TAFT"]
    assert isinstance(nlft, finetune.PlainTail) and isinstance(taft, finetune.TangentTail)
    want = n_tuned_weights(CFG.dim, tuned, CLASSES)
    assert want == {1: 3363, 2: 6643}[tuned]  # by hand for d = 16, 3 classes
    for m in (nlft, taft):
        assert sum(p.numel() for p in m.parameters() if p.requires_grad) == want
        assert all(p.requires_grad for p in m.parameters()), "every tuned weight is trainable ('full')"
    assert nlft.cut == taft.cut == CFG.depth - tuned
    # the same pretrained blocks and the same new head: Δw = 0 makes TAFT the plain model
    images, _ = batch()
    h = finetune.features(vit, images, CFG.depth - tuned)
    torch.testing.assert_close(taft(h), nlft(h), atol=1e-6, rtol=1e-5)
    assert nlft(h).shape == (len(images), CLASSES)


def test_an_unknown_feed_names_the_allowed_values(vit):
    images, y = batch()
    with pytest.raises(ValueError, match=r"feed must be one of \('images', 'cached'\), got 'disk'"):
        tangent_cost.per_example(vit, tangent_cost.tails(vit, CLASSES)["TAFT"], images, y, feed="disk", train=True)


def test_time_per_example_is_the_median_timed_call_over_the_batch(vit, monkeypatch):
    images, y = batch(4)
    tail = tangent_cost.tails(vit, CLASSES)["NLFT"]
    # three timed calls (after two untimed warm-up calls) of 0.5, 0.125 and 0.25 s: median 0.25 s
    c = FakeClock(readings=[10.0, 10.5, 20.0, 20.125, 30.0, 30.25])
    monkeypatch.setattr(tangent_cost, "time", types.SimpleNamespace(perf_counter=c.perf_counter))
    calls = []
    tail.register_forward_hook(lambda *a: calls.append(1))
    assert tangent_cost.per_example(vit, tail, images, y, feed="cached", train=False, repeats=3) == 0.25 / 4
    assert c.calls == 6 and len(calls) == 2 + 3


@pytest.mark.parametrize("method", tangent_cost.METHODS)
def test_a_train_step_trains_the_tail_only_and_inference_nothing(vit, clock, feature_calls, method):
    images, y = batch(5)
    tail = tangent_cost.tails(vit, CLASSES, tuned=2)[method]
    frozen = {k: v.clone() for k, v in vit.state_dict().items()}
    before = {k: v.clone() for k, v in tail.state_dict().items()}
    steps = []
    tail.register_forward_hook(lambda *a: steps.append(tail.training))

    s = tangent_cost.per_example(vit, tail, images, y, feed="cached", train=False, repeats=4)
    assert s == 0.25 / 5 and steps == [False] * 6  # 2 warm-up + 4 timed forward passes, in eval mode
    assert all(torch.equal(v, before[k]) for k, v in tail.state_dict().items())
    assert feature_calls == [(5, CFG.depth - 2)]  # cached: the frozen part ran once, up to the cut

    steps.clear()
    feature_calls.clear()
    s = tangent_cost.per_example(vit, tail, images, y, feed="images", train=True, repeats=4)
    assert s == 0.25 / 5 and steps == [True] * 6
    # images: the frozen part once for the cache and once per call (2 warm-up + 4 timed)
    assert feature_calls == [(5, CFG.depth - 2)] * (1 + 6)
    changed = [k for k, v in tail.state_dict().items() if not torch.equal(v, before[k])]
    trainable = {k for k, p in tail.named_parameters()}
    assert changed and set(changed) <= trainable, "only trainable weights move"
    assert all(torch.equal(v, frozen[k]) for k, v in vit.state_dict().items()), "the backbone stays frozen"


def test_table_has_one_row_per_batch_feed_phase_and_method_in_order(vit, clock, feature_calls):
    images, y = batch(6)
    rows = tangent_cost.table(vit, images, y, CLASSES, batches=(1, 4), repeats=2, tuned=1)
    assert len(rows) == 2 * len(tangent_cost.FEEDS) * 2 * len(tangent_cost.METHODS) == 16
    want = [(b, f, p, m) for b in (1, 4) for f in ("images", "cached") for p in ("train", "inference")
            for m in ("NLFT", "TAFT")]
    assert [(r["batch"], r["feed"], r["phase"], r["method"]) for r in rows] == want
    assert all(set(r) == {"round", "batch", "feed", "phase", "method", "seconds"} for r in rows)
    # every timed call takes one tick on the fake clock: 0.25 s / batch per example
    assert [r["seconds"] for r in rows] == [0.25 / r["batch"] for r in rows]
    assert clock.calls == 16 * 2 * 2  # two readings per timed call, two timed calls per row
    # each row sees the first `batch` images: the cache once, plus one pass per call when fed images
    per_row = {"images": 1 + 2 + 2, "cached": 1}
    assert feature_calls == [(b, CFG.depth - 1) for b, f, _, _ in want for _ in range(per_row[f])]


def test_rounds_repeat_every_row_with_the_methods_order_alternating(vit, clock, feature_calls):
    images, y = batch(6)
    rows = tangent_cost.table(vit, images, y, CLASSES, batches=(1,), repeats=1, tuned=1, rounds=3)
    assert [r["round"] for r in rows] == [r for r in range(3) for _ in range(len(tangent_cost.FEEDS) * 2 * 2)]
    firsts = [rows[i]["method"] for i in range(0, len(rows), 2)]
    assert firsts == ["NLFT"] * 4 + ["TAFT"] * 4 + ["NLFT"] * 4  # a load on the machine hits both
    with pytest.raises(ValueError, match="rounds must be a positive integer"):
        tangent_cost.table(vit, images, y, CLASSES, batches=(1,), repeats=1, rounds=0)


def test_a_batch_larger_than_the_images_is_refused(vit, clock):
    images, y = batch(3)
    with pytest.raises(ValueError, match="batch 4 is larger than the 3 images given"):
        tangent_cost.table(vit, images, y, CLASSES, batches=(1, 4), repeats=1)
