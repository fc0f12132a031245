"""End-to-end private generation with a *trained* model: the party function and its driver.

The party function runs inside each of the two CrypTen processes (``privtrans.shared.mpc.runner``):
the server secret-shares the trained weights, the client its prompt tokens, and
``privtrans.shared.mpc.layers.SecureGPT.generate`` decodes greedily; only the final token ids are revealed.
"""

from __future__ import annotations

import time

import pandas as pd
import torch

from privtrans.shared.models.plain_gpt import GPTConfig, TinyGPT


def generate_party(models: dict, prompts: list, n_new: int) -> dict:
    """Party function: {name: {"ids": [[...] per prompt], "seconds": [...], "meter": [...]}}.

    ``models``: name -> (config dict, state dict, decoding)."""
    from privtrans.shared.mpc.layers import SecureGPT
    from privtrans.shared.mpc.meter import Meter

    out = {}
    for name, (cfg, state, decoding) in models.items():
        model = TinyGPT(GPTConfig(**cfg)).eval()
        model.load_state_dict(state)
        res = {"ids": [], "seconds": [], "meter": []}
        for p in prompts:
            meter = Meter()
            t0 = time.perf_counter()
            with meter.total():
                ids, _ = SecureGPT(model, meter).generate(torch.tensor(p), n_new, decoding)
            res["seconds"].append(time.perf_counter() - t0)
            res["ids"].append([int(i) for i in ids])
            res["meter"].append(meter.summary())
        out[name] = res
    return out


def private_vs_plain(models: dict, prompts: list[list[int]], n_new: int, timeout: float = 600.0) -> dict:
    """Run ``generate_party`` under 2-party MPC and plaintext greedy decoding of the same models.

    ``models``: name -> ``train.Trained``. Returns {name: {"private": ids per prompt,
    "plain": ids per prompt, "match": fraction of equal tokens, "seconds": per prompt, "meter": ...}}
    (the client's, rank 1's, view)."""
    from privtrans.shared.mpc import runner

    for p in prompts:
        if len(p) + n_new - 1 > min(t.model.cfg.max_len for t in models.values()):
            raise ValueError(f"a prompt of {len(p)} tokens + {n_new} new tokens exceeds max_len")
    payload = {k: (t.model.cfg.to_dict(), {n: v.clone() for n, v in t.model.state_dict().items()}, t.decoding)
               for k, t in models.items()}
    ranks = runner.run(generate_party, payload, prompts, n_new, timeout=timeout)
    priv = ranks[1]
    out = {}
    for k, t in models.items():
        plain = [t.model.generate(torch.tensor([p]), n_new, t.decoding)[0].tolist() for p in prompts]
        got = priv[k]["ids"]
        same = sum(a == b for x, y in zip(got, plain) for a, b in zip(x, y))
        out[k] = {"private": got, "plain": plain, "match": same / (len(prompts) * n_new),
                  "ranks_agree": ranks[0][k]["ids"] == got, "seconds": priv[k]["seconds"],
                  "meter": priv[k]["meter"]}
    return out


def cost_table(results: dict) -> pd.DataFrame:
    """Mean seconds, rounds and MiB per prompt of each model's private generation (the client's view)."""
    rows = [{"model": v, "prompt": i, "seconds": r["seconds"][i], "rounds": m["Total"]["rounds"],
             "MiB": m["Total"]["bytes"] / 2**20}
            for v, r in results.items() for i, m in enumerate(r["meter"])]
    return pd.DataFrame(rows).groupby("model", sort=False)[["seconds", "rounds", "MiB"]].mean().reset_index()
