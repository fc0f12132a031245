"""privtrans.book.profiles: bad profile names and seeds are refused, every experiment and notebook has
every profile. The `paper` profile is known to start: its settings have the keys the `ci` code reads (a missing or
misspelt key fails here, not hours into a GPU run), and every typed spec the chapters build from
their settings builds at `paper` as at `ci` (the same constructors the code runs; an unknown key is
refused by name)."""

import itertools
import re

import pytest

from privtrans.book import chapters, profiles
from privtrans.book.pipeline.discover import discover


PROFILES = ("ci", "paper")

# Where `paper` legitimately has other keys than `ci`: (only at ci, only at paper, why). Exactly these
# paths may differ, so a misspelt key in one of these experiments still fails.
_WARMUP = (set(), {"distill.warmup", "student.warmup", "teacher.warmup",
                   "tasks_override", "tasks_override.chat", "tasks_override.chat.n_test"},
           "paper adds a learning-rate warm-up (read with a default) and holds out 100 chat contexts, "
           "as ci does, where its 1,000 exceed the corpus (found by the dry run)")
_SUBSAMPLE = ({"tasks.n_train", "tasks.n_dev"}, set(), "ci subsamples the data; paper uses every example")
KEY_DIFFERENCES = {
    ("merge", "fig6_retraining"): _WARMUP,
    ("merge", "table3_quality"): _WARMUP,
    ("merge", "table3_seeds"): _WARMUP,
    ("merge", "table3_teachers"): _WARMUP,
    ("merge", "fig5_embedding_noise"): _WARMUP,
    ("merge", "private_generation"): _WARMUP,
    ("mpc_attention", "fig5_7_denominators"): _SUBSAMPLE,
    ("mpc_attention", "tables2_6_schemes"): _SUBSAMPLE,
    ("mpc_attention", "table4_5_tasks"): _SUBSAMPLE,
}


def key_paths(d: dict, prefix: str = "") -> set[str]:
    out = set()
    for k, v in d.items():
        p = f"{prefix}.{k}" if prefix else str(k)
        out.add(p)
        if isinstance(v, dict):
            out |= key_paths(v, p)
    return out


def experiments():
    for ch in chapters.KEYS:
        try:
            names = profiles.experiments(ch)
        except FileNotFoundError:
            continue
        for exp in names:
            yield ch, exp


@pytest.mark.parametrize("ch, exp", list(experiments()))
def test_paper_has_the_keys_ci_reads(ch, exp):
    ci, paper = (key_paths(profiles.settings(ch, exp, p)) for p in PROFILES)
    only_ci, only_paper, _why = KEY_DIFFERENCES.get((ch, exp), (set(), set(), ""))
    assert (ci - paper, paper - ci) == (only_ci, only_paper), \
        f"{ch}/{exp}: only at ci {sorted(ci - paper)}, only at paper {sorted(paper - ci)}"


def test_the_key_check_catches_a_misspelt_key():
    good = {"seeds": 5, "model": {"d": 8}}
    assert key_paths(good) != key_paths({"sedes": 10, "model": {"d": 8}})
    assert key_paths(good) != key_paths({"seeds": 10, "model": {"dd": 8}})


def _taft_specs(cfg: dict) -> int:
    from privtrans.taft.experiments import spec_from
    from privtrans.taft.pretrain import PretrainSpec
    from privtrans.taft.selection import grid_specs

    n = 0
    for key, value in cfg.items():
        if not isinstance(value, dict):
            continue
        if key.startswith("backbone"):
            if "patch" in value or "dim" in value:
                PretrainSpec.from_cfg(value)
                n += 1
            else:  # a mapping of named backbones
                for b in value.values():
                    if isinstance(b, dict):
                        PretrainSpec.from_cfg(b)
                        n += 1
        elif "method" in value:
            spec_from(value)
            n += 1
        elif value and all(isinstance(m, dict) and ("fixed" in m or "grid" in m) for m in value.values()):
            for m in value.values():
                n += len(grid_specs(m, cfg.get("schedule") or {}))
    return n


def _dpformer_specs(cfg: dict) -> int:
    from privtrans.dpformer import train

    methods = set(cfg.get("methods") or []) | set(cfg.get("sharing_methods") or []) | set(cfg.get("grid_methods") or [])
    epsilons = list(cfg.get("epsilons") or []) + [cfg[k] for k in ("grid_epsilon", "sharing_epsilon") if k in cfg]
    n = 0
    # labels such as 'nonprivate' name a comparison arm, not a RunSpec method
    for m, e in itertools.product(sorted(methods & set(train.METHODS)), epsilons or [None]):
        train.spec_from_cfg(cfg, m, e, 0)
        n += 1
    return n


def _mpc_specs(cfg: dict) -> int:
    from privtrans.mpc_attention import encoder

    tasks = cfg.get("tasks")
    if not isinstance(tasks, dict) or "model" not in tasks:
        return 0
    encoder.EncoderConfig(vocab_size=100, max_len=tasks["max_len"], n_out=2, **tasks["model"])
    return 1


def _merge_specs(cfg: dict) -> int:
    """Every task's ``train.Spec`` where the settings carry training recipes (an unknown recipe key
    is refused by the ``Recipe`` constructor)."""
    from privtrans.merge import train

    if not any(k in cfg for k in ("teacher", "student", "distill")):
        return 0
    tasks = cfg.get("tasks") or [cfg["task"]]
    for task in tasks:
        train.Spec.from_cfg(task, cfg)
    return len(tasks)


def _dp_icl_specs(cfg: dict) -> int:
    """NoisyHead's ``constants.Hyper`` for every problem size the settings name, through the
    constructor its notebook calls (which one follows from the keys each figure's settings carry)."""
    from privtrans.dp_icl import constants

    if "step_factor" in cfg:  # Figure 6
        hps = [constants.text(cfg["n_train"], cfg["L"], cfg["D"], cfg["lam"], cfg["step_factor"])]
    elif "lam" in cfg:  # Figure 4, at its own lambda and where the theorem applies
        hps = [constants.robustness(cfg["N"], cfg["L"], cfg["D"], lam) for lam in (cfg["lam"], cfg["theorem_lam"])]
    elif "Ns" in cfg and "T" in cfg:  # Figure 2
        hps = [constants.high_dim(n, cfg["T"]) for n in cfg["Ns"]]
    elif "Ts" in cfg:  # Figure 3
        hps = [constants.over_param(cfg["N"], t) for t in cfg["Ts"]]
    else:  # Figure 1, Figure 5, Table 1, the accountants
        hps = [constants.low_dim(n) for n in cfg["Ns"]]
    assert all(h.T >= 1 and h.sigma > 0 for h in hps), hps
    return len(hps)


BUILDERS = {"taft": _taft_specs, "dpformer": _dpformer_specs, "mpc_attention": _mpc_specs,
            "merge": _merge_specs, "dp_icl": _dp_icl_specs}


@pytest.mark.parametrize("ch", sorted(BUILDERS))
def test_every_typed_spec_builds_at_paper_as_at_ci(ch):
    built = {p: sum(BUILDERS[ch](profiles.settings(ch, exp, p)) for c, exp in experiments() if c == ch)
             for p in PROFILES}
    assert built["ci"] > 0 and built["paper"] > 0, built


# The claims issue's seed rule: a comparison judged across paired seeds gets at least 5 of them at
# `ci` and 10 at `paper`. The keys that count a claim's paired seeds; `grid_seeds` only at `paper`,
# since the `ci` grids have one seed per cell and their claims say they are not judged there.
SEED_KEYS = {"seeds": (5, 10), "retrain_seeds": (5, 10), "grid_diag_seeds": (5, 10), "grid_seeds": (None, 10)}


def seeded_experiments():
    from privtrans.book import claims

    out = set()
    for ch in chapters.KEYS:
        for c in claims.load(ch)["claims"]:
            if c.get("kind") == "reproduction" and "interval" in c and "ci" in c.get("profiles", PROFILES):
                out.add((ch, c["notebook"]))
    return sorted(out)


@pytest.mark.parametrize("chapter,experiment", seeded_experiments())
def test_interval_claims_get_five_seeds_at_ci_and_ten_at_paper(chapter, experiment):
    for i, profile in enumerate(PROFILES):
        cfg = profiles.settings(chapter, experiment, profile)
        for key, floors in SEED_KEYS.items():
            if key in cfg and floors[i] is not None:
                assert cfg[key] >= floors[i], f"{chapter}/{experiment} at {profile}: {key} = {cfg[key]} < {floors[i]}"


@pytest.mark.parametrize("profile", PROFILES)
def test_figure9_reads_table1s_models(profile):
    """Figure 9 holds its own copy of Table 1's seeds and ε (smoke runs fewer); at ci and paper they
    must equal Table 1's, or notebook 08 trains models of its own instead of reading Table 1's."""
    fig9 = profiles.settings("dpformer", "fig9_attention_shift", profile)
    table1 = profiles.settings("dpformer", fig9["models_from"], profile)
    assert (fig9["seeds"], fig9["epsilons"]) == (table1["seeds"], table1["epsilons"])


# A claim's text that names its seed counts per profile, "(ci: 5, paper: 10)", is hand-kept: raising
# a profile's seeds left five merge deviations saying "ci: 3" for a session. Each such count must be
# one of the experiment's seed settings at that profile.
SEED_COUNT = re.compile(r"seeds?\b[^()]{0,40}\(ci: (\d+), paper: (\d+)[;)]")


def _seed_counts_named():
    from privtrans.book import claims

    for ch in chapters.KEYS:
        for c in claims.load(ch)["claims"]:
            for field in ("statement", "deviation", "reading", "precondition_why", "kind_why"):
                for m in SEED_COUNT.finditer(c.get(field) or ""):
                    yield pytest.param(ch, c["notebook"], dict(zip(("ci", "paper"), map(int, m.groups()))),
                                       id=f"{ch}-{c['id']}-{field}")


@pytest.mark.parametrize("chapter,experiment,named", list(_seed_counts_named()))
def test_seed_counts_named_in_claims_match_the_profile(chapter, experiment, named):
    for profile, n in named.items():
        cfg = profiles.settings(chapter, experiment, profile)
        counts = {k: cfg[k] for k in SEED_KEYS if k in cfg}
        assert n in counts.values(), f"{chapter}/{experiment}: the claim says {n} seeds at {profile}; the profile has {counts}"


@pytest.mark.parametrize("bad", ["fast", "", None, 1, "CI"])
def test_unknown_profile_names_the_allowed_values(bad):
    with pytest.raises(profiles.ParameterError, match="smoke, ci, paper"):
        profiles.check_profile(bad)


@pytest.mark.parametrize("bad", ["0", 1.5, True, -1])
def test_seed_must_be_a_non_negative_int(bad):
    with pytest.raises(profiles.ParameterError, match="seed"):
        profiles.check_seed(bad)


def test_every_experiment_defines_every_profile():
    for ch, exp in experiments():
        for p in ("smoke", "ci", "paper"):
            assert isinstance(profiles.settings(ch, exp, p), dict)


def test_every_notebook_has_a_profile_entry_and_a_parameters_cell():
    from pathlib import Path

    import jupytext

    repo = Path(__file__).resolve().parents[1]
    for nb in discover(repo):
        assert nb.name in profiles.experiments(nb.chapter), f"{nb.label}: no entry in profile_tables"
        src = jupytext.read(nb.source)
        tagged = [c for c in src.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{nb.label}: needs exactly one cell tagged parameters"
        assert "profile" in tagged[0].source and "seed" in tagged[0].source
        heads = [ln for c in src.cells if c.cell_type == "markdown" for ln in c.source.splitlines()
                 if ln.startswith("# ")]
        assert len(heads) == 1, f"{nb.label}: exactly one top-level heading (the page title), found {heads}"
