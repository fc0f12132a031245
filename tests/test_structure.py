"""Tests mirror modules: every module of lib/privtrans has a test file named after it, or is listed in
EXEMPT below with the reason it has none.

A module's test file is ``tests/test_<its dotted path under privtrans, joined by "_">.py``: a chapter's
``privtrans/merge/metrics.py`` is tested in ``tests/test_merge_metrics.py``, a mechanism's
``privtrans/shared/dp/step.py`` in ``tests/test_shared_dp_step.py``. The machinery is the default
layer, so ``book_`` may be left out: ``privtrans/book/pipeline/cache.py`` is tested in
``tests/test_pipeline_cache.py`` (or ``tests/test_book_pipeline_cache.py``). A package's
``__init__``/``__main__`` counts as the package; one that only documents and re-exports its modules
needs no test file. Test files that name no module (the whole book, the import contracts, the
packaging) are allowed.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "lib" / "privtrans"

# module (path under lib/privtrans) -> why it has no test file of its own (one line each)
EXEMPT = {
    "book/imports.py": "the import scanner under the layer checks: test_layers.py tests it with them",
    "book/paper_values.py": "the reader of data/<chapter>/paper_*.csv: test_claims.py tests it with the claims that read it",
    "book/pipeline/__main__.py": "the command line: test_book.py runs it end to end; each step has its module's test file",
    "dp_icl/reference.py": "the authors' numbers matched to ours: test_dp_icl_readouts.py tests the match with the "
                           "frames it builds for the readouts",
    "dpformer/claim31.py": "the Claim 3.1 measurements: test_dpformer_readouts_phantom.py runs them for its inputs, "
                           "test_shared_dp_phantom.py tests the norms they measure",
    "dpformer/sasrec.py": "the model: test_dpformer_efficiency.py, test_dpformer_reattention.py and "
                          "test_shared_dp_phantom.py run and check it",
    "mpc_attention/encoder_ops.py": "the encoder forward over ops: test_mpc_attention_ops.py compares each "
                                    "back-end's forward with plaintext through it",
    "shared/dp/brute_force.py": "the reference per-sample gradients other tests compare against "
                                "(test_shared_dp_phantom.py)",
    "shared/models/plain_encdec.py": "the plaintext twin that test_shared_mpc_secure_encdec.py compares the "
                                     "secure model with",
    "shared/models/plain_gpt.py": "the plaintext twin that test_shared_mpc_layers.py compares the secure model with",
    "shared/mpc/_preload.py": "imports torch and crypten before parties fork; no code of its own",
    "shared/mpc/runner.py": "every MPC test runs its parties through it (test_shared_mpc_parties.py, "
                            "test_mpc_attention_secure.py)",
    "taft/vit.py": "the network: test_taft_tangent.py and test_taft_pretrain.py run and check it",
}


def _defines_code(path: Path) -> bool:
    """True unless the module only documents and imports (a package's __init__ that re-exports)."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return True
        if isinstance(node, ast.Assign) and any(not (isinstance(t, ast.Name) and t.id in ("__all__", "__version__"))
                                                for t in node.targets):
            return True
    return False


def expected_test_files(module: Path) -> set[str]:
    """The names a test file of ``module`` (a path under lib/privtrans) may have."""
    parts = module.with_suffix("").parts
    if parts[-1] in ("__init__", "__main__"):
        parts = parts[:-1]
    names = {"test_" + "_".join(parts) + ".py"}
    if parts[0] == "book" and len(parts) > 1:
        names.add("test_" + "_".join(parts[1:]) + ".py")
    return names


def modules_without_test_file(lib: Path = LIB, tests: Path = REPO / "tests") -> list[str]:
    have = {p.name for p in tests.glob("test_*.py")}
    missing = []
    for path in sorted(lib.rglob("*.py")):
        module = path.relative_to(lib)
        if module.parts == ("__init__.py",):
            continue
        if path.stem in ("__init__", "__main__") and not _defines_code(path):
            continue
        if not expected_test_files(module) & have:
            missing.append(module.as_posix())
    return missing


def test_every_module_has_a_test_file_or_a_reason():
    missing = modules_without_test_file()
    unexplained = [m for m in missing if m not in EXEMPT]
    assert not unexplained, ("modules with no test file named after them (add tests/test_<path>.py, or list "
                             f"the module in EXEMPT with why): {unexplained}")


def test_the_exempt_list_is_current():
    missing = set(modules_without_test_file())
    gone = [m for m in EXEMPT if not (LIB / m).exists()]
    tested = [m for m in EXEMPT if (LIB / m).exists() and m not in missing]
    assert not gone, f"EXEMPT names modules that no longer exist: {gone}"
    assert not tested, f"EXEMPT names modules that now have a test file; remove them from it: {tested}"
    assert all(reason.strip() for reason in EXEMPT.values())


def test_a_module_without_a_test_file_is_listed(tmp_path):
    lib, tests = tmp_path / "privtrans", tmp_path / "tests"
    (lib / "merge").mkdir(parents=True)
    (lib / "book" / "pipeline").mkdir(parents=True)
    tests.mkdir()
    for module in ("merge/metrics.py", "merge/data.py", "book/pipeline/cache.py", "book/claims.py"):
        (lib / module).write_text("def f():\n    return 1\n")
    (lib / "merge" / "__init__.py").write_text('"""The chapter."""\nfrom . import data  # noqa: F401\n')
    (lib / "book" / "pipeline" / "__main__.py").write_text("def main():\n    pass\n")
    for name in ("test_merge_metrics.py", "test_pipeline_cache.py", "test_book_claims.py", "test_data.py"):
        (tests / name).write_text("")
    # test_data.py names no module unambiguously: merge/data.py still needs test_merge_data.py
    assert modules_without_test_file(lib, tests) == ["book/pipeline/__main__.py", "merge/data.py"]
