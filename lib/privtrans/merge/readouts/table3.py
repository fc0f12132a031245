"""Table 3: generation quality of each row against the teacher, over seeds and over teachers, and the
paper's own Table 3 text against its table.
"""

from __future__ import annotations

import pandas as pd

from privtrans.book.paired import paired_difference
from privtrans.book.readouts import num, ratio, strict

from .. import quality_experiments
from .missing import MissingResult, _cut, _need


TEACHER, ER_NO_TRAIN, SF2RELU, MERGE = "GPT (teacher)", "+ER (no train)", "+MPCformer (sf2relu)", "+MERGE (ours)"
ONLY_ER, ONLY_MM = "+MERGE only ER", "+MERGE only MM"
OOT_CANDIDATES = ("+MPCformer (sf2quad)", "+THE-X")
#: Table 3's n-gram columns (the paper's NIST, ROUGE-L and METEOR; ours without WordNet synonyms)
NGRAM = ("NIST", "ROUGE-L", "METEOR (no synonyms)")


def _table3_value(table: pd.DataFrame, task: str, model: str, metric: str) -> float | None:
    """A row's metric; the row must exist, its value is None when the model diverged (NaN)."""
    row = table[(table.task == task) & (table.model == model)]
    if row.empty:
        raise MissingResult(f"Table 3 has no row {model!r} for task {task!r}")
    return num(row[metric].iloc[0])


def _closer(table, task, a, b, metric="chrF++") -> bool | None:
    """Is row ``a`` closer to the teacher than row ``b`` (absolute difference of ``metric``)?"""
    t, va, vb = (_table3_value(table, task, m, metric) for m in (TEACHER, a, b))
    return None if None in (t, va, vb) else abs(va - t) < abs(vb - t)


def _below(a, b) -> bool | None:
    """a < b; None when either is missing."""
    return None if a is None or b is None else a < b


def _table3_task(table: pd.DataFrame, task: str) -> dict:
    val = lambda model, metric: _table3_value(table, task, model, metric)  # noqa: E731
    rows = table[table.task == task]
    merge_bert, sf2relu_bert = val(MERGE, "BERTScore-proxy"), val(SF2RELU, "BERTScore-proxy")
    merge_chrf, er_chrf = val(MERGE, "chrF++"), val(ER_NO_TRAIN, "chrF++")
    return {
        "metrics": {m: {label: val(label, m) for label, _, _ in quality_experiments.TABLE3_ROWS} for m in quality_experiments.METRIC_ORDER},
        "status": dict(zip(rows.model, rows.status)),
        # a teacher at chrF++ 0 leaves nothing to collapse: the ratio is undefined, not 0
        "er_no_train_chrf_ratio": ratio(er_chrf, val(TEACHER, "chrF++")),
        # the other columns: the same share of the teacher's for the n-gram metrics; for the
        # (log-likelihood) BARTScore-proxy, whose scale is not the paper's, only lower or not
        "er_no_train_ngram_ratio": {m: ratio(val(ER_NO_TRAIN, m), val(TEACHER, m)) for m in NGRAM},
        "er_no_train_below_teacher_bartproxy": _below(val(ER_NO_TRAIN, "BARTScore-proxy"),
                                                      val(TEACHER, "BARTScore-proxy")),
        "merge_minus_sf2relu_bertproxy": None if None in (merge_bert, sf2relu_bert) else merge_bert - sf2relu_bert,
        "merge_over_sf2relu_chrf": ratio(merge_chrf, val(SF2RELU, "chrF++")),
        # a diverged MERGE did not recover (False); a missing ER-without-training row leaves it open (None)
        "merge_beats_er_no_train": (None if er_chrf is None else False if merge_chrf is None
                                    else merge_chrf > er_chrf),
        "only_er_closer_than_merge": _closer(table, task, ONLY_ER, MERGE),
        "only_mm_closer_than_merge": _closer(table, task, ONLY_MM, MERGE),
    }


def table3_quality(table: pd.DataFrame, tasks: list) -> dict:
    """Table 3 from ``quality_experiments.table3_tasks`` (one row per task and model; NaN metrics
    for a model whose training diverged). An aggregate over tasks is None when any task's value is
    missing: a diverged or absent MPCformer row leaves the MERGE-vs-MPCformer gap unjudged."""
    _need(table.task, tasks, "Table 3 tasks")
    rec = {task: _table3_task(table, task) for task in tasks}
    gaps = [None if r["merge_minus_sf2relu_bertproxy"] is None else -r["merge_minus_sf2relu_bertproxy"]
            for r in rec.values()]
    return dict(
        per_task=rec,
        tasks=list(tasks),
        # per task (claims cannot index per_task by a task name); ER without re-training is judged
        # across teacher seeds by ``table3_teachers``, this seed's shares stay in ``per_task``
        merge_gap_bertproxy_by_task=dict(zip(rec, gaps)),
        max_merge_gap_bertproxy=strict(max, gaps),
        min_merge_over_sf2relu_chrf=strict(min, [r["merge_over_sf2relu_chrf"] for r in rec.values()]),
        merge_beats_er_no_train_all=strict(all, [r["merge_beats_er_no_train"] for r in rec.values()]),
        # a pair that cannot be compared (a diverged row) does not count as closer
        n_single_closer=sum(r[k] is True for r in rec.values()
                            for k in ("only_er_closer_than_merge", "only_mm_closer_than_merge")),
        n_single_pairs=2 * len(rec),
        sf2quad_or_thex_failed=any(r["status"][m] == "diverged" for r in rec.values() for m in OOT_CANDIDATES),
        # the paper: both OOT on every task; a cell = (task, model)
        n_sf2quad_thex_failed=sum(r["status"][m] == "diverged" for r in rec.values() for m in OOT_CANDIDATES),
        n_sf2quad_thex=len(OOT_CANDIDATES) * len(rec),
    )


#: the single-change cells' labels, as the page shows them
SINGLE_LABELS = {"only_er": "only-ER", "only_mm": "only-MM"}


def _planned(df: pd.DataFrame, models, seeds, what: str) -> list[int]:
    """The seeds a readout pairs over: ``seeds`` (the notebook's planned seeds) or, without them,
    every seed any of ``models`` has a row at. A seed is never dropped because one model has no
    value there: that model's value at it is None, and the interval counts it as a lost seed."""
    have = sorted({int(s) for s in df[df.model.isin(list(models))].seed})
    if seeds is None:
        return have
    planned = sorted(int(s) for s in seeds)
    stray = sorted(set(have) - set(planned))
    if stray:
        raise MissingResult(f"{what}: rows at seeds {stray} that were not planned ({planned})")
    return planned


def table3_seeds(df: pd.DataFrame, tasks: list, metric: str = "chrF++", close_metric: str = "BERTScore-proxy",
                 seeds: list | None = None) -> dict:
    """Table 3's claims across student seeds, from ``quality_experiments.across_student_seeds``.

    ``single_closer``: per (task, only-ER or only-MM) the paired 95 % t interval across seeds of
    |MERGE − teacher| − |single − teacher| on ``metric`` (positive: the single change is closer to
    the vanilla model than ER + MM), the same seed's MERGE and single model paired.
    ``merge_recovers``: per task the interval across seeds of MERGE − the teacher decoded with ER
    and no re-training (one model, the same at every seed: the spread is MERGE's).
    ``merge_minus_mpcformer``: per task the interval across seeds of MERGE − MPCformer (sf2relu) on
    ``close_metric``, the same seed's two students paired; ``merge_minus_mpcformer_bertscore_units``
    the same on the proxy scaled to the paper's BERTScore (``proxy_scale``: our teacher − ER (no train)
    span made the paper's), which the claim judges against the paper's margin (None where our
    span is not positive: ``proxy_scaled`` is then False and the claim is not judged).
    Every interval runs over the planned student ``seeds`` (default: every seed a student has a row
    at): a seed whose model diverged (NaN) or has no row is a None in its list, kept in the
    interval's ``planned`` count, so a claim cannot hold on the seeds that survived.
    ``distance_by_seed``: each row's |metric − teacher's| per seed, the figure's numbers;
    ``chrf_by_seed`` and ``close_by_seed`` the compared scores."""
    _need(df.task, tasks, "Table 3 across seeds: tasks")
    seeds = _planned(df, quality_experiments.STUDENT_SEED_VARIANTS, seeds, "Table 3 across seeds")
    cells, recovers, close, by_seed, dist_by_seed, close_by_seed = {}, {}, {}, {}, {}, {}
    spans, scale, close_bs = quality_experiments.paper_bertscore_span(), {}, {}
    for task in tasks:
        d = df[df.task == task]
        _need(d.model, ["teacher", "er_no_train", *quality_experiments.STUDENT_SEED_VARIANTS], f"Table 3 across seeds, {task}")

        def per_seed(v, col):
            got = dict(zip((int(s) for s in d[d.model == v].seed), map(num, d[d.model == v][col])))
            return [got.get(s) for s in seeds]

        (teacher,) = [num(x) for x in d[d.model == "teacher"][metric]]
        (er,) = [num(x) for x in d[d.model == "er_no_train"][metric]]
        per = {v: per_seed(v, metric) for v in quality_experiments.SINGLE_CHANGE_VARIANTS}
        dist = {v: [None if x is None or teacher is None else abs(x - teacher) for x in per[v]] for v in per}
        by_seed[task] = {"teacher": teacher, "er_no_train": er, "seeds": seeds, **per}
        dist_by_seed[task] = {"seeds": seeds, **dist}
        for v, label in SINGLE_LABELS.items():
            cells[f"{task} / {label}"] = paired_difference(dist["merge"], dist[v]).as_dict()
        recovers[task] = paired_difference(per["merge"], [er] * len(seeds)).as_dict()
        close_by_seed[task] = {"seeds": seeds, **{v: per_seed(v, close_metric) for v in ("merge", quality_experiments.CLOSE_TO)}}
        close[task] = paired_difference(close_by_seed[task]["merge"], close_by_seed[task][quality_experiments.CLOSE_TO]).as_dict()
        # the proxy in the paper's BERTScore units: scaled so that its teacher − ER (no train) span
        # equals the paper's (two rows the closeness claim does not compare); no span, no scale
        (t_p,) = [num(x) for x in d[d.model == "teacher"][close_metric]]
        (e_p,) = [num(x) for x in d[d.model == "er_no_train"][close_metric]]
        span = None if None in (t_p, e_p) else t_p - e_p
        k = spans.get(task) / span if span and span > 0 and spans.get(task) else None
        scale[task] = {"proxy span": span, "paper span": spans.get(task), "scale": k}
        close_bs[task] = None if k is None else paired_difference(
            [None if x is None else k * x for x in close_by_seed[task]["merge"]],
            [None if x is None else k * x for x in close_by_seed[task][quality_experiments.CLOSE_TO]]).as_dict()
    return {"seeds": seeds, "n_seeds": len(seeds),
            # the fewest seeds any interval has both values at (n_seeds is the planned count)
            "n_paired_min": min(c["n"] for c in (*cells.values(), *recovers.values(), *close.values())),
            "single_closer": cells, "merge_recovers": recovers, "merge_minus_mpcformer": close,
            "proxy_scale": scale, "proxy_scaled": all(v is not None for v in close_bs.values()),
            "merge_minus_mpcformer_bertscore_units": close_bs,
            "chrf_by_seed": by_seed, "close_by_seed": close_by_seed, "distance_by_seed": dist_by_seed}


def table3_teachers(df: pd.DataFrame, tasks: list, seeds: list | None = None) -> dict:
    """ER without re-training across teacher seeds, from ``quality_experiments.across_teacher_seeds``.

    Per task and teacher seed, the share of the teacher's own score that decoding it with ER loses,
    ``1 − ER / teacher`` (None where the teacher scores 0: nothing to lose), on chrF++ and on each
    n-gram column; ``chrf_lost`` and ``ngram_lost`` are the 95 % t intervals of those shares across
    the seeds (the claims: above the paper's reading of a collapse), ``bartproxy_falls`` the
    interval of teacher − ER on the BARTScore-proxy (only the direction: its scale is not
    BARTScore's). Each seed's teacher and its ER decoding are a pair: the spread is the teachers'.
    Every interval runs over the planned teacher ``seeds`` (default: every seed with a row): a
    teacher that diverged, or that scores 0 (nothing to lose), is a lost seed, kept in the count."""
    _need(df.task, tasks, "Table 3 across teacher seeds: tasks")
    seeds = _planned(df, ("teacher", "er_no_train"), seeds, "Table 3 across teacher seeds")
    chrf, ngram, bart, by_seed, lost_by_seed = {}, {}, {}, {}, {}
    for task in tasks:
        d = df[df.task == task]
        _need(d.model, ["teacher", "er_no_train"], f"Table 3 across teacher seeds, {task}")

        def scores(model, metric):
            got = dict(zip((int(s) for s in d[d.model == model].seed), map(num, d[d.model == model][metric])))
            return [got.get(s) for s in seeds]

        def lost(metric):
            return [_cut(e, t) for e, t in zip(scores("er_no_train", metric), scores("teacher", metric))]

        zeros = [0.0] * len(seeds)
        lost_by_seed[task] = {"seeds": seeds, "chrF++": lost("chrF++")}
        chrf[task] = paired_difference(lost_by_seed[task]["chrF++"], zeros).as_dict()
        ngram[task] = {m: paired_difference(lost(m), zeros).as_dict() for m in NGRAM}
        bart[task] = paired_difference(scores("teacher", "BARTScore-proxy"), scores("er_no_train", "BARTScore-proxy")).as_dict()
        by_seed[task] = {"seeds": seeds, "teacher": scores("teacher", "chrF++"), "ER (no train)": scores("er_no_train", "chrF++")}
    return {"seeds": seeds, "tasks": list(tasks),
            "chrf_lost": chrf, "ngram_lost": ngram, "bartproxy_falls": bart, "chrf_by_seed": by_seed,
            "chrf_lost_by_seed": lost_by_seed,
            # the means the intervals are about, per task (and metric), to show beside the claims
            "ngram_lost_by_task": {t: {m: c["mean"] for m, c in per.items()} for t, per in ngram.items()},
            "bartproxy_fall_by_task": {t: c["mean"] for t, c in bart.items()},
            # the smallest mean share lost over the cells: the value each claim shows
            "min_chrf_lost": strict(min, [c["mean"] for c in chrf.values()]),
            "min_ngram_lost": strict(min, [c["mean"] for t in ngram.values() for c in t.values()]),
            "n_seeds": len(seeds),
            # the fewest teacher seeds any chrF++ interval has a value at (n_seeds is the planned count)
            "n_paired_min": min((c["n"] for c in chrf.values()), default=0)}


def paper_table3_text_vs_table(paper: pd.DataFrame, tol: float = 5e-4) -> pd.DataFrame:
    """The paper against itself: per task, how much lower MERGE's BERTScore is than MPCformer
    (sf2relu)'s in its Table 3, and by how much its text says it is lower (§5.4). The two agree
    where they differ by at most ``tol`` (the table's rounding)."""
    rows = []
    for task, g in paper.groupby("task", sort=False):
        by = g.set_index("model")
        _need(by.index, [MERGE, SF2RELU], f"the paper's Table 3 rows for {task}")
        table_gap = float(by.loc[SF2RELU, "bertscore"] - by.loc[MERGE, "bertscore"])
        text_gap = num(by.loc[MERGE, "text_says_lower_by"])
        rows.append({"task": task, "table: MPCformer − MERGE": round(table_gap, 4), "text: lower by": text_gap,
                     "agree": None if text_gap is None else abs(table_gap - text_gap) <= tol})
    return pd.DataFrame(rows)
