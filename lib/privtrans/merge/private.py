"""End-to-end private generation with a *trained* model: the party function and its driver.

The party function runs inside each of the two CrypTen processes (``privtrans.shared.mpc.runner``):
the server secret-shares the trained weights, the client its prompt tokens, and
``privtrans.shared.mpc.layers.SecureGPT.generate`` decodes greedily; only the final token ids are revealed.
For the check only, after the timed and metered protocol, the secret hidden states are revealed too,
so that each step's private logits can be set against the plaintext model's on the same prefix: an
argmax over fixed-point logits may flip a near-tie, which a token-by-token comparison alone would
report as a fault.
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
        res = {"ids": [], "seconds": [], "meter": [], "logits": []}
        for p in prompts:
            meter = Meter()
            t0 = time.perf_counter()
            with meter.total():
                ids, hiddens = SecureGPT(model, meter).generate(torch.tensor(p), n_new, decoding)
            res["seconds"].append(time.perf_counter() - t0)
            res["ids"].append([int(i) for i in ids])
            res["meter"].append(meter.summary())
            with torch.no_grad():  # the check's reveal, outside the protocol's meter and clock
                res["logits"].append(model.lm_head(hiddens.get_plain_text()).float())
        out[name] = res
    return out


def private_vs_plain(models: dict, prompts: list[list[int]], n_new: int, timeout: float = 600.0) -> dict:
    """Run ``generate_party`` under 2-party MPC and plaintext greedy decoding of the same models.

    ``models``: name -> ``train.Trained``. Returns {name: {"private": ids per prompt,
    "plain": ids per prompt, "match": fraction of equal tokens, "agreement": :func:`agreement` of
    the private logits with the plaintext model's on the private prefixes, "seconds": per prompt,
    "meter": ...}} (the client's, rank 1's, view)."""
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
        ref = [t.model.step_logits(p, ids, t.decoding) for p, ids in zip(prompts, got)]
        out[k] = {"private": got, "plain": plain, "match": same / (len(prompts) * n_new),
                  "agreement": agreement(got, priv[k]["logits"], ref),
                  "ranks_agree": ranks[0][k]["ids"] == got, "seconds": priv[k]["seconds"],
                  "meter": priv[k]["meter"]}
    return out


#: how far a private logit may be from the plaintext one, as a fraction of the step's largest |logit|:
#: 16 fractional bits and CrypTen's exp / reciprocal / inv_sqrt approximations give ~1e-3 per op
#: (tests/test_shared_mpc_layers.py uses the same bound); a wrong mask, cache or scale gives O(0.1)
LOGIT_REL_TOL = 1e-2


def agreement(private_ids, private_logits, plain_logits, rel_tol: float = LOGIT_REL_TOL) -> dict:
    """Private decoding against the plaintext model, step by step on the same (private) prefix.

    Per prompt: ``private_ids`` (n,), ``private_logits`` (n, V) revealed from the secret hidden
    states, ``plain_logits`` (n, V) from ``TinyGPT.step_logits``. At each step the allowed error is
    tol = ``rel_tol`` × max |plaintext logit|; a step is a *near tie* when the plaintext top-2 gap is
    at most 2 tol (an error within tol on both logits may then flip the argmax). The check holds when
    every private logit is within tol and every step that is not a near tie reveals the plaintext
    argmax: ``n_faults`` counts both kinds of failure."""
    steps, ties, bad, worst, gaps = 0, [], [], 0.0, []
    for i, (ids, pl, ref) in enumerate(zip(private_ids, private_logits, plain_logits)):
        pl, ref = torch.as_tensor(pl, dtype=torch.float64), torch.as_tensor(ref, dtype=torch.float64)
        if pl.shape != ref.shape or pl.shape[0] != len(ids):
            raise ValueError(f"prompt {i}: {len(ids)} tokens, private logits {tuple(pl.shape)}, plaintext "
                             f"logits {tuple(ref.shape)}: need (tokens, vocab) for both")
        top2 = ref.topk(2, dim=-1).values
        for t, tok in enumerate(ids):
            tol = rel_tol * float(ref[t].abs().max())
            err = float((pl[t] - ref[t]).abs().max())
            gap = float(top2[t, 0] - top2[t, 1])
            steps += 1
            worst = max(worst, err / tol if tol > 0 else float("inf"))
            gaps.append(gap)
            near = gap <= 2 * tol
            if near:
                ties.append({"prompt": i, "step": t, "gap": gap, "tol": tol})
            if err > tol or (not near and int(tok) != int(ref[t].argmax())):
                bad.append({"prompt": i, "step": t, "gap": gap, "err": err, "tol": tol, "token": int(tok),
                            "plain_argmax": int(ref[t].argmax())})
    return {"steps": steps, "rel_tol": rel_tol, "max_err_over_tol": worst, "min_gap": min(gaps) if gaps else None,
            "near_ties": ties, "n_near_ties": len(ties), "faults": bad, "n_faults": len(bad)}


def cost_table(results: dict) -> pd.DataFrame:
    """Mean seconds, rounds and MiB per prompt of each model's private generation (the client's view)."""
    rows = [{"model": v, "prompt": i, "seconds": r["seconds"][i], "rounds": m["Total"]["rounds"],
             "MiB": m["Total"]["bytes"] / 2**20}
            for v, r in results.items() for i, m in enumerate(r["meter"])]
    return pd.DataFrame(rows).groupby("model", sort=False)[["seconds", "rounds", "MiB"]].mean().reset_index()
