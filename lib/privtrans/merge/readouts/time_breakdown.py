"""Figure 1: where the time of private generation goes (per operation group and per round), and
the calibrated network link every time readout of the chapter records beside its counts.
"""

from __future__ import annotations

import pandas as pd

from privtrans.book.paired import paired_difference

from .. import cost_experiments
from .missing import MissingResult, _need


MPCFORMER = ("mpcformer_sf2relu", "mpcformer_sf2quad")
NONLINEAR = ("Softmax", "Act", "Norm")
EMBED_GEN = ("Embed", "Gen")


def _group(t: pd.DataFrame, row: str, group: str) -> float:
    """One cell of a per-group table; a group the meter never entered (no column) cost nothing."""
    _need(t.index, [row], "per-group table")
    return float(t.loc[row, group]) if group in t.columns else 0.0


def _share(t: pd.DataFrame, row: str, groups) -> float:
    return sum(_group(t, row, g) for g in groups)


#: what a link calibration record holds (``network.Calibration.summary``)
LINK_FIELDS = ("bandwidth_GBps", "rtt_ms", "residuals_s", "held_out_errors", "max_held_out_error", "tolerance",
               "calibrated", "status")


def link_record(link: dict) -> dict:
    """The calibration of the link the time claims are judged on (``calibration.paper_link().summary()``):
    its parameters, residuals, held-out errors and whether it is calibrated (the claims' precondition)."""
    _need(link, LINK_FIELDS, "link calibration")
    return {"link_calibration": {k: link[k] for k in LINK_FIELDS}}


def fig1_time_breakdown(shares: dict[str, pd.DataFrame]) -> dict:
    """Figure 1 from ``cost_experiments.fig1_shares``: the nonlinear share of the encoder pass and
    the Embed + Gen share of generation, in time and in bytes, and the largest group's share of
    each pass's time (the paper's Figure 1 is time only: "more balanced" = a smaller largest share)."""
    s, b = shares["seconds"], shares["bytes"]
    for t in (s, b):
        _need(t.index, [cost_experiments.ENCODER, cost_experiments.GENERATOR], "Figure 1 shares")
    return dict(
        enc_time_share_largest=float(s.loc[cost_experiments.ENCODER].max()),
        gen_time_share_largest=float(s.loc[cost_experiments.GENERATOR].max()),
        enc_time_largest_group=str(s.loc[cost_experiments.ENCODER].idxmax()),
        gen_time_largest_group=str(s.loc[cost_experiments.GENERATOR].idxmax()),
        enc_time_share_softmax_act_norm=_share(s, cost_experiments.ENCODER, NONLINEAR),
        enc_time_share_softmax_act=_share(s, cost_experiments.ENCODER, ("Softmax", "Act")),
        gen_time_share_embed_gen=_share(s, cost_experiments.GENERATOR, EMBED_GEN),
        gen_byte_share_embed_gen=_share(b, cost_experiments.GENERATOR, EMBED_GEN),
        enc_byte_share_embed_gen=_share(b, cost_experiments.ENCODER, EMBED_GEN),
        gen_time_shares=s.loc[cost_experiments.GENERATOR].to_dict(),
        gen_byte_shares=b.loc[cost_experiments.GENERATOR].to_dict(),
    )


#: Figure 1(c)'s "non-trivial time consumption" from embedding query and token sampling, read as
#: Embed + Gen taking at least a quarter of generation's time (the donut's, read off, is about half)
EMBED_GEN_NONTRIVIAL = 0.25


def fig1_time_rounds(by_round: dict[int, pd.DataFrame]) -> dict:
    """Figure 1(b, c)'s time claims across the timing rounds (``cost_experiments.fig1_round_shares``:
    {round: time shares of the encoder pass and of generation}). Loopback seconds vary run to run,
    so each round gives one reading of every share and the claims are judged on t intervals across
    the rounds, never on one run: ``enc_nonlinear_time_share`` is the interval of the encoder's
    Softmax + Act + Norm share (against 0: the claim's margin is the share it asks);
    ``gen_time_balanced`` the intervals of the encoder's largest share − generation's (paired by
    round) and of generation's Embed + Gen share − ``EMBED_GEN_NONTRIVIAL``."""
    if len(by_round) < 2:
        raise MissingResult(f"Figure 1's time shares need two timing rounds or more, got {sorted(by_round)}")
    rounds = sorted(by_round)
    for r in rounds:
        _need(by_round[r].index, [cost_experiments.ENCODER, cost_experiments.GENERATOR], f"Figure 1 time shares of round {r}")
    nonlinear = [_share(by_round[r], cost_experiments.ENCODER, NONLINEAR) for r in rounds]
    enc_largest = [float(by_round[r].loc[cost_experiments.ENCODER].max()) for r in rounds]
    gen_largest = [float(by_round[r].loc[cost_experiments.GENERATOR].max()) for r in rounds]
    embed_gen = [_share(by_round[r], cost_experiments.GENERATOR, EMBED_GEN) for r in rounds]
    n = len(rounds)
    return dict(
        timing_rounds=n,
        enc_time_share_softmax_act_norm_by_round=nonlinear,
        enc_time_share_largest_by_round=enc_largest,
        gen_time_share_largest_by_round=gen_largest,
        gen_time_share_embed_gen_by_round=embed_gen,
        enc_nonlinear_time_share=paired_difference(nonlinear, [0.0] * n).as_dict(),
        gen_time_balanced={
            "largest share: encoder − generation": paired_difference(enc_largest, gen_largest).as_dict(),
            f"Embed + Gen share − {EMBED_GEN_NONTRIVIAL}": paired_difference(embed_gen,
                                                                            [EMBED_GEN_NONTRIVIAL] * n).as_dict()},
    )


def fig1a_speedups(encoder: dict, generation: dict, link: dict) -> dict:
    """Figure 1(a) from ``cost_experiments.encoder_network_speedups`` (one BERT-base encoder pass)
    and ``network_speedups`` (GPT-2 generation) on the calibrated link (``link``: its calibration):
    each variant's modelled speed-up over CrypTen on both, and MPCformer's (both softmax
    substitutes) smallest on the encoder, largest on generation."""
    _need(encoder, MPCFORMER, "encoder-pass speed-ups")
    _need(generation, MPCFORMER, "generation speed-ups")
    return dict(
        **link_record(link),
        encoder_speedups={v: float(x) for v, x in encoder.items()},
        generation_speedups={v: float(x) for v, x in generation.items()},
        mpcformer_min_speedup_encoder=min(float(encoder[v]) for v in MPCFORMER),
        mpcformer_max_speedup_generation=max(float(generation[v]) for v in MPCFORMER),
    )
