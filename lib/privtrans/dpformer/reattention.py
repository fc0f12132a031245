"""Re-Attention (DPFormer §4, Algorithm 1): remove the DP-noise bias from attention logits.

Why: with noisy keys K_u ~ N(k_u, v_u I), a fixed query q gives logits z_tu = <q_t, K_u>/√d_h with
variance ‖q_t‖² v_u / d_h, so E[exp z] is inflated by exp(‖q_t‖² v_u / (2 d_h)) (the paper's Eq. 4,
written there without the 1/√d_h). Tokens whose keys are noisier (rare items: their embedding rows
get DP noise at every step but gradient only when they occur) soak up attention. Re-Attention
subtracts that term from the logits before the softmax, which is the paper's
S ← S / exp(Cσ²/2) followed by the softmax's renormalisation.

Use it (training helper)
------------------------
::

    from privtrans.dpformer import reattention
    ra = reattention.enable(model, sigma_dp=sigma, batch_size=B, item_freq=p)   # p: (n_items+1,)
    ...train as usual: every forward of ``model`` now corrects its attention logits...
    reattention.disable(model)

- ``model`` is a :class:`privtrans.dpformer.sasrec.SASRec` (the unwrapped module, not an opacus wrapper).
  ``enable`` sets ``model.record_trace = True`` and installs a :class:`ReAttention` through
  ``model.set_logit_correction``; nothing else about the model changes and no parameter is added.
- ``sigma_dp`` is the noise multiplier of the DP step (noise std σ_dp·C with C = 1) and
  ``batch_size`` the (expected) batch size B; ``p = item_frequencies(train_seqs, n_items)`` is the
  fraction of training sequences that contain each item (index = item id, entry 0 = pad, unused).
  They are plain attributes of the returned object (``ra.sigma_dp = ...`` changes the noise level).
- Options (keywords of ``enable``): ``scale`` κ multiplying every σ_eff (default 1, the paper's);
  ``activation_rule="exact"`` (or ``"relu"``: the ReLU formula for GELU, as the paper);
  ``at_eval=True`` (also correct at evaluation; False: training forwards only).
- Nothing needs calling per step: each forward reads the current (noisy) weights and this batch's
  activations from ``model.trace`` and recomputes the variances. ``ra.key_var[l]`` keeps the last
  (B, L) key variances of layer l for inspection.
- Also here: ``distraction_monte_carlo`` (Figure 4), ``propagation_checks`` and
  ``monte_carlo_key_var`` (the rules and the whole tracker against Monte Carlo),
  ``attention_maps`` / ``attention_shift`` (Figure 9).
- ``sigma_dp = 0`` makes it the identity (non-private training). Cost: one extra O(B·L·d) pass of
  element-wise formulas per layer under ``torch.no_grad``; the correction is a constant offset to
  the autograd graph, so it needs nothing from the clipping code (it calls no module, so no
  per-sample-gradient hook sees it) and it is per-sample (Claim A.6).

Interpretations (the paper leaves these open; the notebooks restate them)
-----------------------------------------------------------------------
1. Scale: σ_eff is the per-coordinate noise std of the averaged gradient (σ_dp/B, σ_dp/(B p_i)),
   used as the std of the parameter itself, as the paper does (learning rate and Adam ignored);
   ``scale`` (κ, default 1) multiplies every σ_eff.
2. p_i = fraction of training sequences containing item i (the derivation of Claim 4.4), clamped to
   ≥ 1/N; treated as public (Remark A.2). The positional embedding counts as a block weight.
3. SASRec multiplies the item lookup by √d, so its variance is multiplied by d.
4. LayerNorm: delta method with the mean and scale of the computed activation, made to saturate
   at variance 1 when the noise dominates (see moments.layernorm_var), plus affine-weight noise.
5. Linear: Eq. 7 summed over inputs and averaged over outputs (scalar per token); biases are block
   weights. ReLU/GELU: the correct Gaussian moments elementwise (per-coordinate pre-activation
   variance from Eq. 7), then averaged (``activation_rule="relu"``
   uses the ReLU formula for GELU as the paper's Remark A.5 does).
6. Attention·V: Σ_u S_tu² v_V,u with the probabilities S held fixed; residual branches add as if
   independent; dropout ignored; pad positions carry zero variance.
7. Queries are treated as noise-free (the paper fixes q); one scalar key variance is shared by the
   heads. C = ‖q_t‖²/d_h for the model's 1/√d_h-scaled logits. The offset is detached.
8. Applied at evaluation too (``at_eval=True``): the noise lives in the released weights.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from privtrans.dpformer import moments

__all__ = ["ReAttention", "enable", "disable", "item_frequencies", "logit_offset",
           "distraction_monte_carlo", "distraction_sweep", "tail_tokens", "total_variation", "monte_carlo_key_var", "propagation_checks",
           "attention_maps", "attention_shift", "attention_shift_table"]


# --------------------------------------------------------------------------------- the correction
def logit_offset(q: torch.Tensor, key_var: torch.Tensor, score_scale: float) -> torch.Tensor:
    """-(Var of logit)/2 = -‖q_t‖² v_u s² / 2 for logits s·<q_t, k_u>; shape (..., L_q, L_k).

    ``q`` is (..., L_q, d_h); ``key_var`` broadcasts to (..., L_k).
    """
    c = q.detach().pow(2).sum(-1) * score_scale ** 2          # (..., L_q)
    return -0.5 * c.unsqueeze(-1) * key_var.unsqueeze(-2).to(c.dtype)


def item_frequencies(seqs, n_items: int) -> torch.Tensor:
    """p_i = fraction of sequences containing item i (document frequency), shape (n_items + 1,).

    ``seqs``: LongTensor (N, L) with pad 0, or an iterable of id sequences. Entry 0 is set to 1 (pad
    rows never get variance anyway). Clamped to at least 1/N so unseen items stay finite.
    """
    if isinstance(seqs, torch.Tensor):
        rows = [r[r > 0] for r in seqs]
    else:
        rows = [torch.as_tensor(list(r), dtype=torch.long) for r in seqs]
    if not rows:
        raise ValueError("need at least one training sequence")
    counts = torch.zeros(n_items + 1, dtype=torch.float64)
    for r in rows:
        u = torch.unique(r)
        if u.numel() and (u.max() > n_items or u.min() < 0):
            raise ValueError(f"item id out of range 0..{n_items}")
        counts[u] += 1
    p = (counts / len(rows)).clamp_min(1.0 / len(rows))
    p[0] = 1.0
    return p


class ReAttention:
    """The logit correction of one SASRec model; call ``enable`` rather than building it by hand."""

    def __init__(self, model, sigma_dp: float, batch_size: int, item_freq, scale: float = 1.0,
                 activation_rule: str = "exact", at_eval: bool = True, quad_nodes: int = 20):
        if sigma_dp < 0 or batch_size <= 0 or scale < 0:
            raise ValueError("need sigma_dp >= 0, batch_size > 0, scale >= 0")
        if activation_rule not in ("exact", "relu"):
            raise ValueError("activation_rule must be 'exact' or 'relu'")
        p = torch.as_tensor(item_freq, dtype=torch.float64).flatten()
        if p.numel() != model.n_items + 1:
            raise ValueError(f"item_freq has {p.numel()} entries, expected n_items + 1 = {model.n_items + 1}")
        if torch.any(p[1:] <= 0) or torch.any(p > 1):
            raise ValueError("item_freq must lie in (0, 1] (use item_frequencies, which clamps)")
        self.model, self.sigma_dp, self.batch_size, self.scale = model, sigma_dp, batch_size, scale
        self.item_freq = p
        self.activation_rule, self.at_eval, self.quad_nodes = activation_rule, at_eval, quad_nodes
        self.key_var: dict[int, torch.Tensor] = {}
        self._state = None  # (id of trace, layer reached, variance of that layer's input)

    # -- noise sources (Claims 4.3 / 4.4) ------------------------------------------------------
    @property
    def w_var(self) -> float:
        """Variance of one block-weight coordinate: (κ σ_dp / B)²."""
        return (self.scale * self.sigma_dp / self.batch_size) ** 2

    def input_var(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, L) variance of x0 = √d·E[ids] + P: κ² d (σ_dp/(B p_i))² + (κ σ_dp/B)², 0 at pads."""
        p = self.item_freq.to(ids.device)[ids]
        emb = (self.scale * self.sigma_dp / (self.batch_size * p)) ** 2 * self.model.scale ** 2
        return ((emb + self.w_var) * mask.squeeze(-1).double()).float()

    # -- propagation through one block ---------------------------------------------------------
    def _ln(self, ln, x, v):
        return moments.layernorm_var(x, v, ln.weight, self.w_var, ln.eps)

    def _lin(self, lin, x, v):
        return moments.linear_var(x, v, lin.weight, self.w_var, self.w_var if lin.bias is not None else None)

    def keys_var(self, blk, bt, v_in):
        """(B, L) variance of block ``blk``'s keys given the variance of its input."""
        return self._lin(blk.attn.k_proj, bt["ln1"].detach(), self._ln(blk.ln1, bt["x_in"].detach(), v_in))

    def block_var(self, blk, bt, v_in, mask):
        """(B, L) variance of a block's output from the quantities its forward traced."""
        a = blk.attn
        v_ln1 = self._ln(blk.ln1, bt["x_in"].detach(), v_in)
        v_v = self._lin(a.v_proj, bt["ln1"].detach(), v_ln1)
        v_ctx = moments.attention_value_var(bt["attn"].detach(), v_v)
        v_att = self._lin(a.out_proj, bt["attn_ctx"].detach(), v_ctx)
        v_mid = moments.residual_var(v_in, v_att)
        v_ln2 = self._ln(blk.ln2, bt["x_mid"].detach(), v_mid)
        ff1 = blk.ff1
        v_pre = moments.linear_var_per_coord(bt["ln2"].detach(), v_ln2, ff1.weight, self.w_var,
                                             self.w_var if ff1.bias is not None else None)
        name = "relu" if isinstance(blk.act, torch.nn.ReLU) else "gelu"
        pre = bt["ffn_pre"].detach()
        if name == "gelu" and self.activation_rule == "exact":
            _, ve = moments.gauss_moments(moments.gelu, pre.float(), v_pre.float(), self.quad_nodes)
            v_act = ve.mean(-1).to(v_ln2.dtype)
        else:
            v_act = moments.activation_var(name, pre, v_pre, rule=self.activation_rule).to(v_ln2.dtype)
        v_ffn = self._lin(blk.ff2, bt["ffn_act"].detach(), v_act)
        return moments.residual_var(v_mid, v_ffn) * mask.squeeze(-1)

    # -- the hook ---------------------------------------------------------------------------
    def __call__(self, q, k, scores, layer_index: int):
        if self.sigma_dp == 0 or (not self.model.training and not self.at_eval):
            return scores
        with torch.no_grad():
            off = self.offset(q, layer_index)
        return scores + off.to(scores.dtype)

    def offset(self, q, layer_index: int) -> torch.Tensor:
        """The (B, h, L, L) logit offset of layer ``layer_index`` for the forward now running."""
        trace = self.model.trace
        if trace is None or not self.model.record_trace:
            raise RuntimeError("Re-Attention needs model.record_trace = True (use reattention.enable)")
        blocks = self.model.blocks
        mask = trace["mask"]
        if self._state is None or self._state[0] is not trace or self._state[1] > layer_index:
            self._state = (trace, 0, self.input_var(trace["ids"], mask))
        _, reached, v = self._state
        for layer in range(reached, layer_index):   # finish the blocks before this one
            v = self.block_var(blocks[layer], trace["blocks"][layer], v, mask)
        self._state = (trace, layer_index, v)
        kv = self.keys_var(blocks[layer_index], trace["blocks"][layer_index], v)   # (B, L)
        self.key_var[layer_index] = kv
        d_head = q.shape[-1]
        return logit_offset(q, kv.unsqueeze(1) if q.dim() == 4 else kv, 1.0 / math.sqrt(d_head))


def enable(model, sigma_dp: float, batch_size: int, item_freq, **kwargs) -> ReAttention:
    """Turn Re-Attention on for ``model`` (see the module docstring); returns the live corrector."""
    for name in ("set_logit_correction", "attention_layers", "blocks"):
        if not hasattr(model, name):
            raise TypeError(f"{type(model).__name__} lacks {name!r}: pass the unwrapped SASRec model")
    ra = ReAttention(model, sigma_dp, batch_size, item_freq, **kwargs)
    model.record_trace = True
    model.set_logit_correction(ra)
    return ra


def disable(model) -> None:
    """Remove the correction and stop tracing."""
    model.set_logit_correction(None)
    model.record_trace = False
    model.trace = None


# --------------------------------------------------------------------------------- Figure 4
@torch.no_grad()
def distraction_monte_carlo(true_logits, key_std, n: int, d_head: int = 16, generator=None,
                            chunk: int = 50_000) -> dict:
    """Expected attention of one query over noisy keys, without and with Re-Attention.

    Builds q and keys k_u with <q, k_u>/√d_h = ``true_logits`` and ‖q‖² = d_h, draws
    K_u = k_u + key_std_u · N(0, I), and averages softmax(<q, K>/√d_h) and its corrected version
    softmax(<q, K>/√d_h - ‖q‖² key_std² / (2 d_h)) over ``n`` draws. Returns numpy arrays
    ``truth``, ``noisy``, ``corrected`` and their standard errors.
    """
    z = torch.as_tensor(true_logits, dtype=torch.float64)
    s = torch.as_tensor(key_std, dtype=torch.float64).expand_as(z)
    if n < 2:
        raise ValueError("need n >= 2 draws")
    q = torch.ones(d_head, dtype=torch.float64)                     # ‖q‖² = d_h
    keys = z[:, None] * q[None, :] * math.sqrt(d_head) / d_head     # <q, k_u>/√d_h = z_u
    off = logit_offset(q[None, :], s.pow(2), 1.0 / math.sqrt(d_head))[0]
    sums = {"noisy": 0.0, "corrected": 0.0}
    sq = {"noisy": 0.0, "corrected": 0.0}
    done = 0
    while done < n:
        m = min(chunk, n - done)
        noise = torch.randn(m, *keys.shape, dtype=torch.float64, generator=generator)
        logits = (keys + s[:, None] * noise) @ q / math.sqrt(d_head)   # (m, L)
        for name, lg in (("noisy", logits), ("corrected", logits + off)):
            a = torch.softmax(lg, -1)
            sums[name] = sums[name] + a.sum(0)
            sq[name] = sq[name] + a.pow(2).sum(0)
        done += m
    out = {"truth": torch.softmax(z, -1).numpy()}
    for name in sums:
        mean = sums[name] / n
        out[name] = mean.numpy()
        out[name + "_se"] = ((sq[name] / n - mean.pow(2)).clamp_min(0) / (n - 1)).sqrt().numpy()
    return out


def tail_tokens(key_std) -> np.ndarray:
    """Figure 4's tail tokens: the noisiest ones (logit std at the maximum), as a boolean mask."""
    std = np.asarray(key_std, dtype=float)
    return std == std.max()


def total_variation(p, q) -> float:
    """½ Σ |p − q| between two attention rows."""
    return 0.5 * float(np.abs(np.asarray(p, float) - np.asarray(q, float)).sum())


def distraction_sweep(true_logits, key_std, sweep_std, n: int, d_head: int = 16, generator=None):
    """Figure 4's sweep: the tail tokens' logit std set to each of ``sweep_std`` (the others kept).

    Per σ: the attention on the (first) tail token relative to the truth, without and with
    Re-Attention, Eq. 4's prediction e^{σ²/2}, and the total variation of each to the truth."""
    import pandas as pd

    tail = tail_tokens(key_std)
    first = int(np.argmax(tail))
    rows = []
    for s in sweep_std:
        std = np.where(tail, s, np.asarray(key_std, float))
        r = distraction_monte_carlo(true_logits, std.tolist(), n, d_head=d_head, generator=generator)
        rows.append({"tail_logit_std": s, "inflation_noisy": r["noisy"][first] / r["truth"][first],
                     "inflation_reattention": r["corrected"][first] / r["truth"][first],
                     "eq4_prediction": float(np.exp(s ** 2 / 2)),
                     "tv_noisy": total_variation(r["noisy"], r["truth"]),
                     "tv_reattention": total_variation(r["corrected"], r["truth"])})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------- checks
@torch.no_grad()
def monte_carlo_key_var(model, seqs: torch.Tensor, ra: ReAttention, n: int, generator=None) -> dict:
    """Empirical per-token key variance when the weights get the noise Re-Attention assumes.

    Every parameter is redrawn around its current value with std κσ_dp/B (item-embedding row i:
    κσ_dp/(B p_i)), the model is run in eval mode, and the variance of each layer's keys (averaged
    over coordinates) is estimated over ``n`` draws. Returns {layer: (B, L) variance}; compare with
    ``ra.key_var`` after a forward pass with Re-Attention on. This is the end-to-end check of the
    moment propagation (LayerNorm, Linear, ReLU/GELU, attention·V, residuals) in one number.
    """
    from torch.func import functional_call

    was_training, was_corr = model.training, [a.logit_correction for a in model.attention_layers()]
    model.eval()
    model.set_logit_correction(None)
    params = dict(model.named_parameters())
    sd_w = ra.scale * ra.sigma_dp / ra.batch_size
    sd_e = (ra.scale * ra.sigma_dp / (ra.batch_size * ra.item_freq)).to(torch.float32)
    keys: dict[int, list] = {i: [] for i in range(len(model.blocks))}
    hooks = [blk.attn.k_proj.register_forward_hook(
        lambda m, i, o, li=li: keys[li].append(o.detach())) for li, blk in enumerate(model.blocks)]
    try:
        for _ in range(n):
            noisy = {}
            for name, p in params.items():
                eps = torch.randn(p.shape, generator=generator, dtype=p.dtype)
                if p is model.item_emb.weight:
                    noisy[name] = p + sd_e[:, None] * eps
                else:
                    noisy[name] = p + sd_w * eps
            functional_call(model, noisy, (seqs,), tie_weights=True)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
        for a, c in zip(model.attention_layers(), was_corr):
            a.logit_correction = c
    return {li: torch.stack(v).var(0).mean(-1) for li, v in keys.items()}


def propagation_checks(n: int = 20_000, n_model: int = 300, generator=None):
    """Each moment rule against Monte Carlo, and the whole tracker against noisy-weight SASRec draws.

    Returns a DataFrame (rule, analytic, monte_carlo, rel_error). The rows marked 'paper' use the
    paper's own shortcuts (printed Eq. 8; ReLU formula for GELU) to show how far off they are.
    """
    import pandas as pd

    from .sasrec import SASRec

    g = generator if generator is not None else torch.Generator().manual_seed(0)
    f64 = dict(dtype=torch.float64)
    rows = []

    def add(rule, analytic, mc):
        a, m = float(analytic), float(mc)
        rows.append({"rule": rule, "analytic": a, "monte_carlo": m, "rel_error": a / m - 1})

    d, L = 16, 4
    x = torch.randn(L, d, generator=g, **f64)
    W = 0.4 * torch.randn(d, d, generator=g, **f64)
    v = torch.tensor([0.01, 0.1, 0.5, 2.0], **f64)
    w_var = 0.01
    X = x + v.sqrt()[:, None] * torch.randn(n, L, d, generator=g, **f64)
    Wn = W + math.sqrt(w_var) * torch.randn(n, d, d, generator=g, **f64)
    pre_mc = torch.einsum("nli,noi->nlo", X, Wn)
    add("Linear, Eq. 7 (scalar per token)", moments.linear_var(x, v, W, w_var).mean(),
        pre_mc.var(0).mean())
    pre, vpre = x @ W.T, moments.linear_var_per_coord(x, v, W, w_var)
    add("Linear → ReLU (correct moments)", moments.activation_var("relu", pre, vpre).mean(),
        pre_mc.clamp_min(0).var(0).mean())
    add("Linear → ReLU (Eq. 8 as printed; paper)", moments.relu_var_paper_eq8(pre, vpre).mean(),
        pre_mc.clamp_min(0).var(0).mean())
    gel = torch.nn.functional.gelu(pre_mc).var(0).mean()
    add("Linear → GELU (exact GELU moments)", moments.activation_var("gelu", pre, vpre).mean(), gel)
    add("Linear → GELU (ReLU formula; paper)", moments.activation_var("gelu", pre, vpre, rule="relu").mean(), gel)
    for vv, label in ((0.01, "small"), (3.0, "large")):
        vt = torch.full((L,), vv, **f64)
        Xl = x + math.sqrt(vv) * torch.randn(n, L, d, generator=g, **f64)
        add(f"LayerNorm ({label} noise, v = {vv:g})", moments.layernorm_var(x, vt).mean(),
            torch.nn.functional.layer_norm(Xl, (d,)).var(0).mean())
    S = torch.softmax(2 * torch.randn(1, L, L, generator=g, **f64), -1)
    V = torch.randn(1, L, d, generator=g, **f64)
    Vn = V + v.sqrt()[None, :, None] * torch.randn(n, 1, L, d, generator=g, **f64)
    add("attention · V (weights fixed)", moments.attention_value_var(S, v[None]).mean(), (S @ Vn).var(0).mean())

    state = torch.random.get_rng_state()
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
    model = SASRec(200, 12, d=32, n_blocks=2, dropout=0.0)
    torch.random.set_rng_state(state)
    seqs = torch.randint(1, 201, (6, 12), generator=g)
    seqs[0, :4] = 0
    p = torch.exp(torch.empty(201, **f64).uniform_(-6, -0.5, generator=g))
    ra = enable(model, sigma_dp=2.0, batch_size=256, item_freq=p)
    model.eval()
    model(seqs)
    mc = monte_carlo_key_var(model, seqs, ra, n_model, g)
    mask = seqs > 0
    for layer in sorted(mc):
        add(f"SASRec keys, block {layer} (end to end)", ra.key_var[layer][mask].mean(), mc[layer][mask].mean())
    disable(model)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------- Figure 9
@torch.no_grad()
def attention_maps(model, seqs: torch.Tensor) -> list[torch.Tensor]:
    """Per-layer attention probabilities (B, L, L), heads averaged, of ``model`` in eval mode.

    Whatever logit correction is installed on the model is applied (so a DPFormer model is read
    with its Re-Attention on, as it is evaluated).
    """
    was_training, was_rec = model.training, model.record_trace
    model.eval()
    model.record_trace = True
    try:
        model.encode(seqs)
        maps = [bt["attn"].detach().mean(1) for bt in model.trace["blocks"]]
    finally:
        model.record_trace = was_rec
        model.train(was_training)
    if not was_rec:
        model.trace = None
    return maps


def attention_shift(attn: torch.Tensor, ref: torch.Tensor, seqs: torch.Tensor, item_freq) -> dict:
    """How far attention ``attn`` is from a reference ``ref`` and how much it leans to rare items.

    Over every real (non-pad) query row with at least two visible keys:
    - ``kl``: mean KL(ref_t || attn_t), the reference being the non-private model's attention;
    - ``rarity_lean``: mean of Σ_u S_tu r_u - mean_u r_u over the visible keys u, r_u = -log p of
      the item at u: how much more rarity the attention picks up than uniform attention would
      (positive = attention leans to rare items), in nats of -log p;
    - ``rarity_lean_ref``: the same for the reference.
    """
    p = torch.as_tensor(item_freq, dtype=torch.float64)
    valid = seqs > 0
    b, length = seqs.shape
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    visible = causal[None] & valid[:, None, :] & valid[:, :, None]          # (B, L, L)
    rows = visible.sum(-1) >= 2
    r = -torch.log(p[seqs])                                                  # (B, L)
    a, q = attn.double(), ref.double()
    eps = 1e-12
    kl = (q * (torch.log(q + eps) - torch.log(a + eps))).where(visible, torch.zeros_like(q)).sum(-1)
    uni = (r[:, None, :] * visible).sum(-1) / visible.sum(-1).clamp_min(1)
    lean = (a * r[:, None, :] * visible).sum(-1) - uni
    lean_ref = (q * r[:, None, :] * visible).sum(-1) - uni
    return {"kl": float(kl[rows].mean()), "rarity_lean": float(lean[rows].mean()),
            "rarity_lean_ref": float(lean_ref[rows].mean()), "rows": int(rows.sum())}


def attention_shift_table(models: dict, seqs: torch.Tensor, item_freq, reference: str = "non-private"):
    """:func:`attention_shift` of every model against the ``reference`` model of the same seed.

    ``models`` maps (method, ε, seed) to a model; the reference is (``reference``, None, seed).
    One row per (method, ε, seed, block): KL to the reference, rarity lean, rows counted."""
    import pandas as pd

    rows = []
    for s in sorted({k[2] for k in models}):
        ref_maps = attention_maps(models[(reference, None, s)], seqs)
        for (m, e, seed), model in models.items():
            if seed != s:
                continue
            for block, a in enumerate(attention_maps(model, seqs)):
                st = attention_shift(a, ref_maps[block], seqs, item_freq)
                rows.append({"method": m, "epsilon": e, "seed": s, "block": block, "KL_to_nonprivate": st["kl"],
                             "rarity_lean": st["rarity_lean"], "rows": st["rows"]})
    return pd.DataFrame(rows)
