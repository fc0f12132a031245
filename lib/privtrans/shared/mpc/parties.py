"""Party functions: what each of the two processes runs (importable, so they survive spawn).

Every function here runs *inside* a party after ``crypten.init()`` (see ``runner.run``). Inputs
that a party owns are generated from a shared seed on both sides so the plaintext reference can be
computed afterwards; only the owner's copy is used for its shares (``src=``).
"""

from __future__ import annotations

import torch

from . import compat
from .meter import Meter

SERVER, CLIENT = 0, 1  # model owner, data owner (the paper's encrypt_model src=0 / encrypt_tensor src=1)


def _gen(seed: int):
    return torch.Generator().manual_seed(seed)


def selfcheck(seed: int = 0) -> dict:
    """Private matmul / softmax / exp / reciprocal between the two parties, revealed in plaintext."""
    cr = compat.crypten()
    g = _gen(seed)
    x = torch.randn(4, 8, generator=g)
    w = torch.randn(8, 5, generator=g) * 0.5
    pos = torch.rand(4, 5, generator=g) * 9.0 + 0.5  # reciprocal domain used in the models
    cx = cr.cryptensor(x, src=CLIENT)
    cw = cr.cryptensor(w, src=SERVER)
    y = cx.matmul(cw)
    out = {
        "rank": cr.communicator.get().get_rank(),
        "world_size": cr.communicator.get().get_world_size(),
        "matmul": y.get_plain_text(),
        "softmax": y.softmax(-1).get_plain_text(),
        "exp": (y * 0.5).exp().get_plain_text(),
        "reciprocal": cr.cryptensor(pos, src=CLIENT).reciprocal().get_plain_text(),
        "inputs": dict(x=x, w=w, pos=pos),
    }
    out["stats"] = cr.communicator.get().get_communication_stats()
    return out


def matmul_cost(n: int, k: int, m: int, seed: int = 0) -> dict:
    """Bytes/rounds of one secret (client) n x k @ secret (server) k x m matmul, per party."""
    cr = compat.crypten()
    g = _gen(seed)
    x = cr.cryptensor(torch.randn(n, k, generator=g), src=CLIENT)
    w = cr.cryptensor(torch.randn(k, m, generator=g), src=SERVER)
    meter = Meter()
    with meter("Linear"):
        x.matmul(w)
    return meter.summary()["Linear"]


def fail(message: str = "boom"):
    """A party that raises (tests that the runner reports it and cleans up)."""
    raise RuntimeError(message)


def hang(rank_to_hang: int = 1, seconds: float = 60.0):
    """One party sleeps, the other waits on it in a collective (tests the runner's time limit)."""
    import time

    cr = compat.crypten()
    if cr.communicator.get().get_rank() == rank_to_hang:
        time.sleep(seconds)
    cr.cryptensor(torch.ones(2), src=0).get_plain_text()
    return "done"


# ----------------------------------------------------------------------------- the tiny GPT
def build_model(variant: str, sizes: dict, seed: int, state_dict=None):
    """The plaintext twin of a variant; random init from ``seed`` unless a state dict is given.

    ``sizes`` with ``n_enc_layers`` (and ``max_src``) builds the encoder-decoder, else the GPT.
    Both parties build it (the client's copy only supplies shapes: ``src=SERVER`` shares use the
    server's values).
    """
    from privtrans.shared.models.plain_encdec import TinyEncDec, encdec_variant_config
    from privtrans.shared.models.plain_gpt import TinyGPT, variant_config

    torch.manual_seed(seed)
    if "n_enc_layers" in sizes:
        cfg, decoding = encdec_variant_config(variant, **sizes)
        model = TinyEncDec(cfg).eval()
    else:
        cfg, decoding = variant_config(variant, **sizes)
        model = TinyGPT(cfg).eval()
    if state_dict is not None:
        model.load_state_dict(state_dict)
    else:  # variance-preserving random weights: activations O(1), as in a trained model
        with torch.no_grad():
            for name, prm in model.named_parameters():
                if name.endswith("_logits"):  # random, non-uniform constant (cross-)attention
                    prm.normal_(0.0, 1.0)
                elif "thex_w" in name:  # THE-X's affine "1 / row sum": a scale, as a trained one is
                    keys = model.cfg.max_src if name.endswith("thex_wx") else model.cfg.max_len
                    prm.copy_(torch.tensor([0.0, 1.0 / keys]))
                elif prm.dim() == 2 and "wpe" not in name:
                    prm.normal_(0.0, 1.0 / (prm.shape[1] ** 0.5) if "wte" not in name else 1.0)
    return model, decoding


def secure_twin(model, meter=None):
    """``SecureGPT`` or ``SecureEncDec``, whichever shares this plaintext model."""
    from .layers import SecureGPT
    from privtrans.shared.models.plain_encdec import TinyEncDec
    from .secure_encdec import SecureEncDec

    return (SecureEncDec if isinstance(model, TinyEncDec) else SecureGPT)(model, meter)


def private_forward(variants: list, sizes: dict, ids: list, seed: int = 0, src: list | None = None) -> dict:
    """Teacher-forced private forward of each variant: {variant: (logits, hidden) revealed}.

    ``src``: the source tokens, for the encoder-decoder (``sizes`` with ``n_enc_layers``)."""
    out = {}
    for v in variants:
        model, _ = build_model(v, sizes, seed)
        sg = secure_twin(model)
        args = (torch.tensor(ids),) if src is None else (torch.tensor(src), torch.tensor(ids))
        logits, hidden = sg.forward(*args)
        out[v] = (logits.get_plain_text(), hidden.get_plain_text())
    return out


def private_generate(variants: list, sizes: dict, prefix: list, n_new: int, seed: int = 0,
                     decodings: dict | None = None, state_dicts: dict | None = None,
                     src: list | None = None) -> dict:
    """Private greedy generation per variant: {variant: {"ids", "hidden", "meter"}}."""
    out = {}
    for v in variants:
        model, decoding = build_model(v, sizes, seed, (state_dicts or {}).get(v))
        decoding = (decodings or {}).get(v, decoding)
        meter = Meter()
        sg = secure_twin(model, meter)
        args = (torch.tensor(prefix),) if src is None else (torch.tensor(src), torch.tensor(prefix))
        with meter.total():
            ids, hidden = sg.generate(*args, n_new, decoding)
        out[v] = {"ids": ids.long(), "hidden": hidden.get_plain_text(), "meter": meter.summary(),
                  "decoding": decoding}
    return out


def generation_report(variant: str = "merge", sizes: dict | None = None, prefix: list | None = None,
                      n_new: int = 8, seed: int = 0, src: list | None = None) -> dict:
    """JSON-friendly private generation of one variant (the two-host command line prints it)."""
    sizes = sizes or dict(vocab_size=64, d_model=16, n_layers=2, n_heads=2, max_len=32)
    r = private_generate([variant], sizes, prefix or [1, 2, 3, 4], n_new, seed, src=src)[variant]
    total = r["meter"]["Total"]
    return {"variant": variant, "decoding": r["decoding"], "ids": r["ids"].tolist(),
            "bytes": int(total["bytes"]), "rounds": int(total["rounds"]), "seconds": round(total["seconds"], 3)}


def nonlinear_probe(shapes: dict | None = None, seed: int = 0) -> dict:
    """Bytes and rounds of each nonlinear op group at a few shapes (fits ``closed_form_cost`` constants).

    Returns {op: [(shape, bytes, rounds), ...]} measured through ``SecureGPT``'s own op code.
    """
    from .layers import SecureGPT
    from privtrans.shared.models.plain_gpt import GPTConfig, TinyGPT

    cr = compat.crypten()
    g = _gen(seed)
    out = {}

    def measure(name, shape, fn):
        x = cr.cryptensor(torch.randn(*shape, generator=g))
        s0 = cr.communicator.get().get_communication_stats()
        fn(x)
        s1 = cr.communicator.get().get_communication_stats()
        out.setdefault(name, []).append((tuple(shape), int(s1["bytes"] - s0["bytes"]), s1["rounds"] - s0["rounds"]))

    shapes = shapes or {"rows": [(1, 8), (3, 8), (1, 24), (2, 48)], "heads": [(2, 1, 5), (2, 1, 16), (2, 3, 16), (4, 2, 33)]}
    for att in ("softmax", "sf2relu", "sf2quad", "thex"):
        for act in ("gelu", "quad", "relu"):
            if (att == "softmax") != (act == "gelu") and att != "thex":
                continue
            for norm in ("ln", "affine"):
                d = 8
                m = TinyGPT(GPTConfig(vocab_size=16, d_model=d, n_heads=2, max_len=64, attention=att, act=act,
                                      attn_norm=norm, ffn_norm=norm))
                sg = SecureGPT(m)
                p = sg.blocks[0]
                for shp in shapes["rows"]:
                    n, dd = shp
                    if dd == d:
                        measure(f"norm_{norm}", shp, lambda x: sg.norm(x, p["norm2"], norm))
                    measure(f"act_{act}", shp, sg.act)
                    measure("argmax", shp, lambda x: x.argmax(dim=-1, one_hot=True))
                for shp in shapes["heads"]:
                    measure(f"att_{att}", shp, lambda x: sg.normalise(x, None, p))
    return {k: sorted(set(v)) for k, v in out.items()}


def rowop_probe(lengths: list, rows: int = 1, seed: int = 0) -> dict:
    """Bytes/rounds of argmax(one_hot) and of CrypTen softmax on (rows, n) inputs, for each n."""
    cr = compat.crypten()
    g = _gen(seed)
    out = {"argmax": {}, "softmax": {}}
    for n in lengths:
        x = cr.cryptensor(torch.randn(rows, n, generator=g))
        for name, fn in (("argmax", lambda t: t.argmax(dim=-1, one_hot=True)), ("softmax", lambda t: t.softmax(-1))):
            s0 = cr.communicator.get().get_communication_stats()
            fn(x)
            s1 = cr.communicator.get().get_communication_stats()
            out[name][n] = (int(s1["bytes"] - s0["bytes"]), s1["rounds"] - s0["rounds"])
    return out


def probe_bundle(matmul_shape: tuple, lengths: list, rows: int, seed: int = 0) -> dict:
    """One party run for several probes (saves a process start in tests)."""
    return {"matmul": matmul_cost(*matmul_shape, seed=seed), "rowops": rowop_probe(lengths, rows, seed)}


def mul_chain_trace(n: int, depth: int, protocol: str = "beaver", seed: int = 0) -> dict:
    """``depth`` dependent elementwise multiplications of secret vectors of ``n`` elements (x·y·y·…),
    under CrypTen's ``protocol`` ("beaver": 2PC; "replicated": 3PC); this party's message trace
    (``trace.recording``) and CrypTen's own counters, for ``trace.counts`` against a closed form."""
    from . import trace

    cr = compat.crypten()
    g = _gen(seed)
    x, y = torch.randn(n, generator=g), torch.rand(n, generator=g) + 0.5
    with cr.cfg.temp_override({"mpc.protocol": protocol}):
        sx, sy = cr.cryptensor(x, src=0), cr.cryptensor(y, src=1)
        comm = compat.comm()
        comm.reset_communication_stats()
        events: list = []
        with trace.recording(events):
            z = sx
            for _ in range(depth):
                z = z * sy
        stats = comm.get_communication_stats()
        err = float((z.get_plain_text() - x * y ** depth).abs().max())
    return {"events": events, "crypten": {"rounds": int(stats["rounds"]), "bytes": int(stats["bytes"])},
            "max_abs_error": err}
