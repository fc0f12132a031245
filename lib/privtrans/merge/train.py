"""Training and decoding of the tiny plaintext twin (``privtrans.shared.models.plain_gpt.TinyGPT``) for
MERGE's quality experiments (Table 3, Figures 5 and 6).

Two stages, as in the paper:

1. ``train_teacher``: the vanilla model (softmax, GeLU, LayerNorm) trained from scratch with the
   language-model loss on ``source <sep> target <eos>`` (stage 1; GPT-2 fine-tuning in the paper).
2. ``train_student``: a variant initialised from the teacher and re-trained:

   - MPCformer (sf2relu / sf2quad) and THE-X: CE + layer-wise MSE to the teacher's hidden states
     (MPCformer's distillation, ``train_baseline_distill.py`` in the official code);
   - MERGE, only-ER, only-MM: Eq. 7, ``L = λ·L_cos + (1-λ)·L_ce`` with λ = 0.75, where L_ce is
     taken on noised input embeddings (Eq. 5: ``m ⊙ (e + n)``, m ~ Bernoulli(1-p),
     n ~ U(-ε, ε)) and L_cos = 1 - cos(h_{t-1}, E[x_t]) aligns the last hidden state with the
     next token's embedding (Eq. 4), which is what embedding resending feeds back.

   Two additions of ours for the post-LN twin (see ``norm_alignment_loss`` and ``match_scales``):
   a log²-norm-ratio term next to 1 - cos, and a start in which hidden states are as long as
   embeddings, so that what ER resends has the scale of what the model was trained on.

   Merged (MM) students start from the teacher through Eq. 10 (W_0 = (W_V W_d + I) diag(γ),
   b_0 = γ ⊙ b_d + β, with the teacher's LayerNorm γ, β) and Eq. 8 (C = the teacher's attention
   averaged over training sequences).

``get_model`` keeps every trained model in the book's run cache (``RunCache("merge")``), keyed by
everything that determines it (data, sizes, recipes, seed, and the source of this module and all it imports), so
the chapter's notebooks share them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from privtrans.book import dry
from privtrans.book.device import pick_device
from privtrans.book.progress_bar import steps
from privtrans.book.runcache import RunCache
from privtrans.shared.models.plain_gpt import GPTConfig, TinyGPT, attention_probs, causal_mask, variant_config
from . import data
from . import metrics

STUDENTS = ("mpcformer_sf2relu", "mpcformer_sf2quad", "thex", "merge", "only_er", "only_mm")
DISTILLED = ("mpcformer_sf2relu", "mpcformer_sf2quad", "thex")  # MPCformer-style recipe
ER_RECIPE = ("merge", "only_er", "only_mm")  # Eq. 7 recipe (official train_slide.py)


@dataclass
class Recipe:
    """Optimisation settings of one training run."""

    steps: int = 400
    batch: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    clip: float = 1.0
    lam: float = 0.75  # λ of Eq. 7 (ER recipe)
    mask_p: float = 0.3  # p of Eq. 5: probability of zeroing an embedding element
    noise_rel: float = 1.0  # ε of Eq. 5, in units of the RMS of the token embeddings
    scale_w: float = 1.0  # weight of the norm-matching term added to Eq. 4 (see norm_alignment_loss)
    match_init: bool = True  # ER recipe: start with hidden states as long as embeddings (match_scales)
    c_lr_mult: float = 100.0  # learning rate of the constant-attention logits C, relative to lr
    distill_mse: float = 1.0  # weight of the hidden-state MSE (MPCformer recipe)
    eval_every: int = 25  # validation loss every this many steps (Figure 6)
    warmup: int = 20

    def to_dict(self):
        return dict(self.__dict__)


@dataclass
class Trained:
    """A trained model with what produced it and its loss curves."""

    model: TinyGPT
    variant: str  # "teacher" or one of STUDENTS
    decoding: str
    history: dict = field(default_factory=dict)  # step -> losses, see _train
    seconds: float = 0.0
    cached: bool = False
    diverged: bool = False


# ---------------------------------------------------------------------------------------------
# data -> tensors
# ---------------------------------------------------------------------------------------------


@dataclass
class Prepared:
    task: data.TaskData
    vocab: data.Vocab
    train_ids: torch.Tensor
    val_ids: torch.Tensor
    max_len: int
    max_src: int


def prepare(task: data.TaskData, max_len: int, max_src: int, min_count: int = 1, n_val: int = 64) -> Prepared:
    """Vocabulary from the training split; the last ``n_val`` training examples are held out as
    the validation set of the loss curves (Figure 6)."""
    if max_src + 3 > max_len:
        raise ValueError(f"max_src={max_src} leaves no room for a response within max_len={max_len}")
    vocab = data.Vocab.build(task, min_count)
    ids, _ = data.encode_pairs(vocab, task.train, max_len, max_src)
    n_val = min(n_val, len(ids) // 5)
    return Prepared(task, vocab, ids[: len(ids) - n_val], ids[len(ids) - n_val :], max_len, max_src)


# ---------------------------------------------------------------------------------------------
# losses
# ---------------------------------------------------------------------------------------------


def lm_loss(logits, ids, pad: int = data.Vocab.pad):
    """Next-token cross entropy over every non-pad target (prompt and response, as stage 1)."""
    tgt = ids[:, 1:]
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=pad)


def cosine_alignment_loss(hidden, next_emb, keep):
    """Eq. 4: mean over kept positions of 1 - cos(h_{t-1}, E[x_t]).

    ``hidden`` (B, T-1, d): last hidden states at positions 0..T-2; ``next_emb`` (B, T-1, d): the
    embeddings of the tokens at positions 1..T-1; ``keep`` (B, T-1) bool."""
    cos = F.cosine_similarity(hidden, next_emb, dim=-1, eps=1e-8)
    keep = keep.to(cos.dtype)
    return ((1.0 - cos) * keep).sum() / keep.sum().clamp_min(1.0)


def norm_alignment_loss(hidden, next_emb, keep):
    """Mean over kept positions of log²(‖h_{t-1}‖ / ‖E[x_t]‖): **our addition** to Eq. 4.

    GPT-2 is pre-LN, so its first block normalises whatever vector is resent and only the direction
    of h matters (hence the paper's cosine). Our twin is post-LN (as the paper writes the block):
    its first attention sees the resent vector unnormalised, and its hidden states (LayerNorm
    outputs) are ~10x longer than token embeddings, so ER without this term feeds inputs of the
    wrong scale."""
    r = torch.log(hidden.norm(dim=-1).clamp_min(1e-6) / next_emb.norm(dim=-1).clamp_min(1e-6)) ** 2
    keep = keep.to(r.dtype)
    return (r * keep).sum() / keep.sum().clamp_min(1.0)


def merge_loss(model: TinyGPT, ids, recipe: Recipe, generator=None):
    """Eq. 7 on a batch: (total, ce, alignment). CE is computed on noised embeddings (Eq. 5-6);
    alignment = 1 - cos (Eq. 4) + ``scale_w`` · norm term (``norm_alignment_loss``)."""
    emb = model.embed(ids)
    rms = emb.detach().pow(2).mean().sqrt()
    eps = recipe.noise_rel * rms
    noise = (torch.rand(emb.shape, generator=generator, device=emb.device) * 2 - 1) * eps
    keep = (torch.rand(emb.shape, generator=generator, device=emb.device) >= recipe.mask_p).to(emb.dtype)
    logits, hidden = model(inputs_embeds=keep * (emb + noise))
    ce = lm_loss(logits, ids)
    keep_t = ids[:, 1:] != data.Vocab.pad
    align = cosine_alignment_loss(hidden[:, :-1], emb[:, 1:], keep_t)
    if recipe.scale_w:
        align = align + recipe.scale_w * norm_alignment_loss(hidden[:, :-1], emb[:, 1:], keep_t)
    return recipe.lam * align + (1 - recipe.lam) * ce, ce, align


def hidden_states(model: TinyGPT, ids):
    """Outputs of every block (list of L tensors) and the logits, on clean token embeddings."""
    x = model.embed(ids) + model.wpe.weight[: ids.shape[1]]
    outs = []
    for blk in model.blocks:
        x = blk(x)
        outs.append(x)
    return model.lm_head(x), outs


def distill_loss(student: TinyGPT, teacher: TinyGPT, ids, recipe: Recipe):
    """MPCformer recipe: CE + weight · mean over layers of MSE(student block output, teacher's)."""
    logits, hs = hidden_states(student, ids)
    with torch.no_grad():
        _, ht = hidden_states(teacher, ids)
    keep = (ids != data.Vocab.pad).unsqueeze(-1).to(logits.dtype)
    mse = sum(((a - b) ** 2 * keep).sum() / (keep.sum() * a.shape[-1]) for a, b in zip(hs, ht)) / len(hs)
    ce = lm_loss(logits, ids)
    return ce + recipe.distill_mse * mse, ce, mse


# ---------------------------------------------------------------------------------------------
# initialisation of students from the teacher
# ---------------------------------------------------------------------------------------------


@torch.no_grad()
def average_attention(teacher: TinyGPT, ids) -> list[torch.Tensor]:
    """Eq. 8: per layer, the teacher's attention probabilities (H, T, T) averaged over sequences."""
    x = teacher.embed(ids) + teacher.wpe.weight[: ids.shape[1]]
    T = ids.shape[1]
    out = []
    for blk in teacher.blocks:
        cfg = blk.cfg
        q, k, _ = blk.qkv(x).split(cfg.d_model, dim=-1)
        scores = blk.split_heads(q) @ blk.split_heads(k).transpose(-1, -2) / math.sqrt(cfg.d_head)
        probs = attention_probs(cfg.attention, scores, causal_mask(T, T, x.device),
                                getattr(blk, "thex_w", None), cfg.sf2quad_c)
        out.append(probs.mean(0))
        x = blk(x)
    return out


@torch.no_grad()
def init_from_teacher(student: TinyGPT, teacher: TinyGPT, ids) -> TinyGPT:
    """Copy every parameter the two share (by name and shape); for merged blocks build W_0, b_0
    by Eq. 10 from the teacher's V, output projection and LayerNorm γ, β, and C's logits as the
    log of the teacher's averaged attention (Eq. 8; the causal softmax of log p gives back p)."""
    sd_t = teacher.state_dict()
    sd_s = student.state_dict()
    for name, val in sd_t.items():
        if name in sd_s and sd_s[name].shape == val.shape:
            sd_s[name] = val.clone()
    student.load_state_dict(sd_s)
    needs_c = student.cfg.attention == "constant"
    avg = average_attention(teacher, ids[:, : student.cfg.max_len]) if needs_c else None
    d = student.cfg.d_model
    for i, (bs, bt) in enumerate(zip(student.blocks, teacher.blocks)):
        if needs_c:
            T = avg[i].shape[-1]
            bs.c_logits.zero_()
            bs.c_logits[:, :T, :T] = torch.log(avg[i].clamp_min(1e-6))
        if student.cfg.merged:
            w_v = bt.qkv.weight[2 * d :].T
            w_d = bt.proj.weight.T
            g, beta = bt.norm1.weight, bt.norm1.bias
            bs.w0.weight.copy_(((w_v @ w_d + torch.eye(d, device=w_v.device)) * g).T)
            bs.w0.bias.copy_(g * (bt.proj.bias + bt.qkv.bias[2 * d :] @ w_d) + beta)
    return student


@torch.no_grad()
def match_scales(model: TinyGPT, ids) -> float:
    """Make the last hidden states as long (RMS) as the token embeddings: E ← s·E and the last
    LayerNorm's (γ, β) ← (γ, β)/s with s = sqrt(RMS(h)/RMS(E)). The tied LM head maps a given
    final LayerNorm input to the same logits; the inputs become s times longer, which re-training
    absorbs. Our starting point for the ER recipe (the norm term of the
    alignment loss would otherwise need ~1,000 steps to shrink γ by the ~10x it must); returns s."""
    _, h = model(input_ids=ids)
    keep = ids != data.Vocab.pad
    s = math.sqrt(h[keep].pow(2).mean().sqrt().item() / model.wte.weight.pow(2).mean().sqrt().item())
    model.wte.weight.mul_(s)
    last = model.blocks[-1].norm2
    last.weight.div_(s)
    last.bias.div_(s)
    return s


# ---------------------------------------------------------------------------------------------
# the training loop
# ---------------------------------------------------------------------------------------------


def _lr(step: int, recipe: Recipe) -> float:
    """Linear warm-up then cosine decay to 10 %."""
    if step < recipe.warmup:
        return recipe.lr * (step + 1) / recipe.warmup
    frac = (step - recipe.warmup) / max(1, recipe.steps - recipe.warmup)
    return recipe.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def _train(model: TinyGPT, prep: Prepared, recipe: Recipe, loss_fn, seed: int) -> dict:
    """AdamW with clipping; returns the history {"step": [...], "train": {...}, "val_step": [...], "val": {...}}."""
    dev = next(model.parameters()).device
    g = torch.Generator(device="cpu").manual_seed(seed)
    gd = torch.Generator(device=dev).manual_seed(seed) if dev.type != "cpu" else g
    # C's logits get their own, larger step size: Adam moves every parameter by about lr per step,
    # so in a few hundred steps at lr 1e-3 logits of order 1-10 would barely leave their start
    # (the paper trains C for 30,000-50,000 steps); no weight decay on them
    c_params = [p for n, p in model.named_parameters() if n.endswith("c_logits")]
    other = [p for n, p in model.named_parameters() if not n.endswith("c_logits")]
    groups = [{"params": other, "mult": 1.0}]
    if c_params:
        groups.append({"params": c_params, "mult": recipe.c_lr_mult, "weight_decay": 0.0})
    opt = torch.optim.AdamW(groups, lr=recipe.lr, weight_decay=recipe.weight_decay)
    train, val = prep.train_ids.to(dev), prep.val_ids.to(dev)
    hist = {"step": [], "train": {}, "val_step": [], "val": {}}

    def log(where, parts):
        for k, v in parts.items():
            hist[where].setdefault(k, []).append(float(v))

    def validate(step):
        model.eval()
        with torch.no_grad():
            parts = loss_fn(model, val, gd)
        model.train()
        hist["val_step"].append(step)
        log("val", dict(zip(("total", "ce", "aux"), parts)))

    model.train()
    validate(0)
    for step in steps(dry.loop(range(recipe.steps), "train steps"), total=recipe.steps, desc="train"):
        idx = torch.randint(len(train), (recipe.batch,), generator=g)
        batch = train[idx.to(dev)]
        # drop the all-pad tail of the batch: shorter sequences are faster and change nothing
        T = int((batch != data.Vocab.pad).sum(1).max())
        batch = batch[:, : max(T, 2)]
        for grp in opt.param_groups:
            grp["lr"] = _lr(step, recipe) * grp["mult"]
        total, ce, aux = loss_fn(model, batch, gd)
        if not torch.isfinite(total):
            hist["diverged_at"] = step
            break
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.clip)
        opt.step()
        hist["step"].append(step + 1)
        log("train", {"total": total.item(), "ce": ce.item(), "aux": aux.item()})
        if (step + 1) % recipe.eval_every == 0 or step + 1 == recipe.steps:
            validate(step + 1)
    model.eval()
    return hist


def _fresh_model(cfg: GPTConfig, seed: int, device) -> TinyGPT:
    torch.manual_seed(seed)
    return TinyGPT(cfg).to(device)


def base_config(prep: Prepared, d_model: int, n_layers: int, n_heads: int) -> GPTConfig:
    return GPTConfig(vocab_size=len(prep.vocab), d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                     max_len=prep.max_len)


def train_teacher(prep: Prepared, base: GPTConfig, recipe: Recipe, seed: int, device=None) -> Trained:
    """Stage 1: the vanilla model from scratch with the LM loss."""
    device = device or pick_device()
    cfg, decoding = variant_config("crypten", base)
    model = _fresh_model(cfg, seed, device)

    def loss_fn(m, ids, _g):
        logits, _ = m(input_ids=ids)
        ce = lm_loss(logits, ids)
        return ce, ce, torch.zeros(())

    t0 = time.perf_counter()
    hist = _train(model, prep, recipe, loss_fn, seed)
    return Trained(model.cpu(), "teacher", decoding, hist, time.perf_counter() - t0,
                   diverged="diverged_at" in hist)


def train_student(variant: str, teacher: TinyGPT, prep: Prepared, recipe: Recipe, seed: int,
                  device=None) -> Trained:
    """Stage 2: initialise ``variant`` from the teacher and re-train it with its recipe."""
    if variant not in STUDENTS:
        raise ValueError(f"unknown student variant {variant!r}; known: {', '.join(STUDENTS)}")
    device = device or pick_device()
    cfg, decoding = variant_config(variant, teacher.cfg)
    teacher = teacher.to(device).eval()
    model = _fresh_model(cfg, seed + 1, device)
    init_from_teacher(model, teacher, prep.train_ids[:500].to(device))
    if variant in ER_RECIPE and recipe.match_init:
        match_scales(model, prep.train_ids[:256].to(device))
    if variant in DISTILLED:
        loss_fn = lambda m, ids, g: distill_loss(m, teacher, ids, recipe)  # noqa: E731
    else:
        loss_fn = lambda m, ids, g: merge_loss(m, ids, recipe, g)  # noqa: E731
    t0 = time.perf_counter()
    hist = _train(model, prep, recipe, loss_fn, seed)
    teacher.cpu()
    return Trained(model.cpu(), variant, decoding, hist, time.perf_counter() - t0,
                   diverged="diverged_at" in hist or not all(
                       math.isfinite(v) for v in hist["val"]["total"]))


@dataclass
class Spec:
    """Everything that determines a task's models (one per notebook profile)."""

    task: str
    n_train: int
    n_test: int
    data_seed: int = 0
    max_len: int = 48
    max_src: int = 20
    min_count: int = 1
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 2
    teacher: Recipe = field(default_factory=Recipe)
    student: Recipe = field(default_factory=Recipe)  # MERGE, only-ER, only-MM (Eq. 7)
    distill: Recipe = field(default_factory=Recipe)  # MPCformer sf2relu / sf2quad, THE-X

    @classmethod
    def from_cfg(cls, task: str, cfg: dict) -> "Spec":
        """From a notebook's settings: keys of this class, ``teacher``/``student`` recipe dicts,
        and optional per-task overrides under ``tasks_override[task]``."""
        c = dict(cfg)
        c.update((cfg.get("tasks_override") or {}).get(task, {}))
        kw = {k: c[k] for k in ("n_train", "n_test", "data_seed", "max_len", "max_src", "min_count",
                                "d_model", "n_layers", "n_heads") if k in c}
        return cls(task=task, teacher=Recipe(**(c.get("teacher") or {})),
                   student=Recipe(**(c.get("student") or {})),
                   distill=Recipe(**(c.get("distill") or {})), **kw)

    def to_dict(self):
        d = dict(self.__dict__)
        for k in ("teacher", "student", "distill"):
            d[k] = getattr(self, k).to_dict()
        return d

    def recipe(self, variant: str) -> Recipe:
        if variant == "teacher":
            return self.teacher
        return self.distill if variant in DISTILLED else self.student


_PREP: dict = {}


def prepared(spec: Spec) -> Prepared:
    k = (spec.task, spec.n_train, spec.n_test, spec.data_seed, spec.max_len, spec.max_src, spec.min_count)
    if k not in _PREP:
        task = data.load_task(spec.task, spec.n_train, spec.n_test, spec.data_seed)
        _PREP[k] = prepare(task, spec.max_len, spec.max_src, spec.min_count)
    return _PREP[k]


#: the modules whose source determines a trained model: editing any of them retrains
MODEL_CODE = (__name__,)  # with every privtrans module it imports (runcache.source_fingerprint)


def run_cache() -> RunCache:
    """The chapter's trained models, ``_build/cache/merge``, shared by its notebooks."""
    return RunCache("merge")


def _to_blob(out: Trained) -> dict:
    return dict(config=out.model.cfg.to_dict(), state=out.model.state_dict(), decoding=out.decoding,
                history=out.history, seconds=out.seconds, diverged=out.diverged)


def _from_blob(variant: str, blob: dict, cached: bool) -> Trained:
    model = TinyGPT(GPTConfig(**blob["config"]))
    model.load_state_dict(blob["state"])
    model.eval()
    return Trained(model, variant, blob["decoding"], blob["history"], blob["seconds"], cached, blob["diverged"])


def get_model(spec: Spec, variant: str, seed: int, device=None, teacher_seed: int | None = None) -> Trained:
    """The teacher (``variant="teacher"``) or a student of ``spec``, from the run cache or trained now.

    A student re-trains the teacher of ``teacher_seed`` (default: its own ``seed``) with its own
    seed's initialisation of the new parts, data order and noise: several student seeds from one
    teacher are the paper's design (one pretrained GPT-2, each variant fine-tuned from it).
    The key holds the spec without the recipes that do not train this model (a student depends on
    the teacher's recipe and its own), the variant, the seed(s) and ``MODEL_CODE``'s source."""
    sd = {k: v for k, v in spec.to_dict().items() if k not in ("teacher", "student", "distill")}
    sd["recipes"] = [spec.teacher.to_dict()] + ([] if variant == "teacher" else [spec.recipe(variant).to_dict()])
    from_teacher = seed if teacher_seed is None or variant == "teacher" else teacher_seed
    key = {"spec": sd, "variant": variant, "seed": seed}
    if from_teacher != seed:  # a student of its own seed's teacher keeps the key it always had
        key["teacher_seed"] = from_teacher

    def make() -> dict:
        prep = prepared(spec)
        base = base_config(prep, spec.d_model, spec.n_layers, spec.n_heads)
        if variant == "teacher":
            return _to_blob(train_teacher(prep, base, spec.teacher, seed, device))
        teacher = get_model(spec, "teacher", from_teacher, device).model
        return _to_blob(train_student(variant, teacher, prep, spec.recipe(variant), seed, device))

    blob, hit = run_cache().get_or_make(f"{spec.task}-{variant}", key, make, code=MODEL_CODE)
    return _from_blob(variant, blob, hit)


def train_missing(specs: list[Spec], variants, seed: int, progress=None, student_seeds=None) -> None:
    """Fill the run cache with the models of ``specs`` × ``variants`` on every core: the teachers
    first (every student starts from its task's teacher), then the students, each call a worker
    process (``privtrans.book.workers``) that stores its model; ``get_model`` then reads them back.
    Each model is deterministic given its seed and the thread count: the same as training them one
    by one up to float rounding (a worker runs one torch thread; measured on the smoke settings: the
    students' weights within 3e-6 of a two-thread run). On a GPU ``workers.in_parallel`` trains them
    one by one in this process (CUDA does not survive ``fork``). ``student_seeds``: the students
    at each of these seeds, all from the teacher of ``seed`` (default: ``[seed]``)."""
    from functools import partial

    from privtrans.book import workers

    train_teachers(specs, [seed], progress=progress)
    workers.in_parallel([partial(get_model, s, v, ss, teacher_seed=seed) for s in specs
                         for v in dict.fromkeys(variants) if v != "teacher" for ss in (student_seeds or [seed])],
                        progress=progress)


def train_teachers(specs: list[Spec], seeds, progress=None) -> None:
    """Fill the run cache with the teacher of every spec at each of ``seeds``, on every core (as
    ``train_missing``): Table 3's ER without re-training is a property of the teacher alone, so its
    claims are judged across teacher seeds."""
    from functools import partial

    from privtrans.book import workers

    for s in specs:
        prepared(s)  # in this process, so the forked workers share the prepared data
    workers.in_parallel([partial(get_model, s, "teacher", ts) for s in specs for ts in seeds], progress=progress)


# ---------------------------------------------------------------------------------------------
# greedy decoding and evaluation
# ---------------------------------------------------------------------------------------------


@torch.no_grad()
def greedy(model: TinyGPT, prompt: list[int], n_new: int, decoding: str = "vanilla",
           noise_rel: float = 0.0, generator=None) -> list[int]:
    """Greedy decoding of one prompt (``plain_gpt.TinyGPT.generate`` for a batch of equal-length
    prompts does the same without noise).

    ``noise_rel`` > 0 (Figure 5): the embedding of every newly generated token is perturbed with
    U(-ε, ε) noise, ε = noise_rel × RMS of the token embeddings, before it is fed back (the
    paper's "virtual ER" with noisy embeddings); decoding must then be ``vanilla``."""
    batch = greedy_batch(model, [prompt], n_new, decoding, noise_rel, generator)
    return batch[0]


@torch.no_grad()
def greedy_batch(model: TinyGPT, prompts: list[list[int]], n_new: int, decoding: str = "vanilla",
                 noise_rel: float = 0.0, generator=None) -> list[list[int]]:
    """Greedy decoding of many prompts; prompts are grouped by length (positions are absolute,
    so no padding), and each generates ``min(n_new, max_len - len + 1)`` tokens."""
    if decoding not in ("vanilla", "er"):
        raise ValueError(f"decoding must be 'vanilla' or 'er', got {decoding!r}")
    if noise_rel and decoding != "vanilla":
        raise ValueError("embedding noise (Figure 5) is defined for vanilla decoding")
    model.eval()
    dev = next(model.parameters()).device
    eps = noise_rel * model.wte.weight.pow(2).mean().sqrt()
    out: list = [None] * len(prompts)
    groups: dict[int, list[int]] = {}
    for i, p in enumerate(prompts):
        groups.setdefault(len(p), []).append(i)
    for L, idx in sorted(groups.items()):
        k = min(n_new, model.cfg.max_len - L + 1)
        ids = torch.tensor([prompts[i] for i in idx], device=dev)
        if not noise_rel:
            gen = model.generate(ids, k, decoding)
        else:
            emb = model.wte(ids)
            toks = []
            for _ in range(k):
                logits, _ = model(inputs_embeds=emb)
                nxt = logits[:, -1].argmax(-1)
                toks.append(nxt)
                e = model.wte(nxt)[:, None]
                n = (torch.rand(e.shape, generator=generator).to(dev) * 2 - 1) * eps
                emb = torch.cat([emb, e + n], 1)
            gen = torch.stack(toks, 1)
        for j, i in enumerate(idx):
            out[i] = gen[j].tolist()
    return out


def generate_texts(trained: Trained, prep: Prepared, examples=None, n_new: int = 32, decoding=None,
                   noise_rel: float = 0.0, seed: int = 0) -> list[str]:
    """Decoded test outputs (text up to the first ``<eos>``)."""
    examples = prep.task.test if examples is None else examples
    prompts = [data.prompt_ids(prep.vocab, ex.source, prep.max_src) for ex in examples]
    g = torch.Generator().manual_seed(seed)
    ids = greedy_batch(trained.model, prompts, n_new, decoding or trained.decoding, noise_rel, g)
    return [prep.vocab.decode(x) for x in ids]


@torch.no_grad()
def bartscore_proxy(judge: TinyGPT, prep: Prepared, hyps: list[str], examples=None) -> float:
    """**BARTScore proxy** (faithfulness direction, source -> hypothesis): the judge's (our tiny
    teacher's) mean per-token log p(hypothesis <eos> | source <sep>). Higher is better; it favours
    outputs that look like the teacher's own, so it is a proxy, not BARTScore."""
    examples = prep.task.test if examples is None else examples
    judge.eval()
    scores = []
    for h, ex in zip(hyps, examples):
        p = data.prompt_ids(prep.vocab, ex.source, prep.max_src)
        seq = (p + prep.vocab.encode(h) + [prep.vocab.eos])[: judge.cfg.max_len]
        ids = torch.tensor([seq])
        logits, _ = judge(input_ids=ids)
        lp = torch.log_softmax(logits[0, :-1], -1).gather(-1, ids[0, 1:, None])[:, 0]
        scores.append(lp[len(p) - 1 :].mean().item())
    return float(np.mean(scores))


def bertscore_proxy(judge: TinyGPT, prep: Prepared, hyps: list[str], examples=None) -> float:
    """**BERTScore proxy**: greedy-matching F1 over the judge's (teacher's) token embeddings."""
    examples = prep.task.test if examples is None else examples
    table = judge.wte.weight.detach().cpu().numpy()
    vec = lambda w: table[prep.vocab.stoi.get(w, prep.vocab.unk)]  # noqa: E731
    return metrics.embedding_f1(hyps, [ex.refs for ex in examples], vec)


def evaluate(trained: Trained, judge: TinyGPT, prep: Prepared, n_new: int = 32, decoding=None,
             noise_rel: float = 0.0, seed: int = 0, examples=None) -> tuple[dict, list[str]]:
    """Table 3's six numbers (two of them proxies) for one model on the test split, and the texts."""
    examples = prep.task.test if examples is None else examples
    hyps = generate_texts(trained, prep, examples, n_new, decoding, noise_rel, seed)
    refs = [ex.refs for ex in examples]
    out = {"BERTScore-proxy": bertscore_proxy(judge, prep, hyps, examples),
           "BARTScore-proxy": bartscore_proxy(judge, prep, hyps, examples)}
    out.update(metrics.score_all(hyps, refs))
    if prep.task.name == "concepts":
        out["coverage"] = data.concept_coverage(hyps, examples)
    return out, hyps
