"""One fingerprint scheme, one atomic write, one cache for expensive artefacts (trained models, sweeps).

Every cache of the book keys its entries the same way, with :func:`fingerprint`: a SHA-256 over a
canonical JSON of everything that determines the entry (settings, a data fingerprint, the source of
the code that makes it). Files are only ever replaced whole, through :func:`atomic_write`, so a
build killed at any moment leaves either the old file or the new one, never half of one; a file
that still cannot be read (a foreign or damaged one) is a miss, with a one-line warning.

The notebook cache of the pipeline (``privtrans.book.pipeline.cache``) uses the same two functions.
Chapters use :class:`RunCache`::

    cache = RunCache("dpformer")
    result = cache.get_or_make("run", {"spec": spec.as_dict(), "data": data_fp},
                               lambda: train_run(spec, split), code=[__name__])

Entries live in ``_build/cache/<namespace>/<kind>-<key>.pt`` (``torch.save``: tensors, arrays and
plain Python) with a ``.json`` sidecar of the key's parts, for people.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

from .paths import build_dir

KEY_CHARS = 20


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, default=str, separators=(",", ":")).encode()


def fingerprint(*parts, length: int = KEY_CHARS) -> str:
    """A short hex digest of JSON-able ``parts`` (dict keys sorted; other objects by ``str``)."""
    return hashlib.sha256(_canonical(parts)).hexdigest()[:length]


def hash_files(files: Iterable[Path], root: Path, h=None):
    """Feed each file's path (relative to ``root``) and bytes into a sha256 ``h``; return ``h``."""
    h = h or hashlib.sha256()
    for p in sorted(set(files)):
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h


def _is_machinery(module: str) -> bool:
    # how a run is cached, scheduled and shown (privtrans.book) and the package's version: not what
    # it computes, so not part of any artefact's key
    return module == "privtrans" or module == "privtrans.book" or module.startswith("privtrans.book.")


def package_dir(package: Path | None = None) -> Path:
    """``package``, or the directory of the privtrans that is running: whose import graph keys read."""
    import privtrans

    return Path(package) if package is not None else Path(privtrans.__file__).resolve().parent


def code_modules(roots: Iterable[str | ModuleType], package: Path | None = None) -> list[str]:
    """The privtrans modules that importing ``roots`` executes, read from the import graph of
    ``package`` (default: the privtrans that is running), the machinery in ``privtrans.book`` left out."""
    from .imports import import_graph

    names = [r if isinstance(r, str) else r.__name__ for r in roots]
    return _closure(import_graph(package_dir(package)), names)


def _closure(graph: dict, names) -> list[str]:
    from .imports import used_modules

    return sorted(used_modules(graph, [n for n in names if n in graph], skip=_is_machinery))


def source_fingerprint(roots: Iterable[str | ModuleType], package: Path | None = None) -> str:
    """Hash of the source files of ``roots`` (names or module objects) and of every privtrans module
    they import, followed through the import graph (``code_modules``), so that no edit of the code
    that makes an artefact can serve the old artefact, and no hand-kept list of modules can miss one.
    A root outside privtrans (a test's module) counts by its own file."""
    from .imports import import_graph, stamp

    pkg = package_dir(package)
    tree = stamp(pkg)
    graph = import_graph(pkg, tree)
    names, outside = [], []
    for r in roots:
        names.append(r if isinstance(r, str) else r.__name__)
        if names[-1] not in graph:
            outside.append(Path((importlib.import_module(r) if isinstance(r, str) else r).__file__).resolve())
    files = tuple(graph[m][0].resolve() for m in _closure(graph, names))
    return _digest(files + tuple(outside)) if outside else _digest_in_tree(files, tree)


def _digest(files: tuple) -> str:
    root = Path(os.path.commonpath([str(f.parent) for f in files])) if files else Path("/")
    return hash_files(files, root).hexdigest()[:KEY_CHARS]


@functools.lru_cache(maxsize=256)
def _digest_in_tree(files: tuple, tree: tuple) -> str:
    """``_digest`` of package files, remembered until a source file's mtime changes (``tree``, as the
    import graph is): a build asks for the same code's key once per cached run (11 ms a time)."""
    return _digest(files)


def atomic_write(path: str | os.PathLike, write: Callable, mode: str = "wb") -> Path:
    """Write through ``write(file)`` into a temporary file beside ``path``, then rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write(path, lambda f: f.write(text), mode="w")


def read_json(path: str | os.PathLike) -> dict | None:
    """A JSON file's content; None (with a warning) when it is missing or cannot be parsed."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        warnings.warn(f"{path}: unreadable ({type(e).__name__}: {e}); treated as absent", stacklevel=2)
        return None


class RunCache:
    """Artefacts on disk keyed by :func:`fingerprint`; ``get_or_make`` computes only on a miss."""

    def __init__(self, namespace: str, root: str | os.PathLike | None = None):
        self.dir = Path(root) if root is not None else build_dir() / "cache" / namespace
        self.hits = 0
        self.misses = 0

    def key(self, parts: dict, code: Iterable[str | ModuleType] = ()) -> str:
        """The key of ``parts`` (the settings the run reads, the keys of cached artefacts it starts
        from) made by ``code`` (the module(s) whose functions make it: ``source_fingerprint``). A
        dry run's artefacts (one step per loop: ``privtrans.book.dry``) are keyed apart."""
        from . import dry

        return fingerprint(parts, source_fingerprint(code), *(["dry run"] if dry.active() else []))

    def path(self, kind: str, key: str) -> Path:
        if not kind.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"kind must be a short name of letters, digits, '-' and '_', got {kind!r}")
        return self.dir / f"{kind}-{key}.pt"

    def get(self, kind: str, key: str):
        """The stored artefact, or None when absent or unreadable (a damaged file is a miss)."""
        import torch

        p = self.path(kind, key)
        if not p.is_file():
            return None
        try:
            return torch.load(p, map_location="cpu", weights_only=False)
        except Exception as e:  # noqa: BLE001 - any unreadable file is a miss, never a crash
            warnings.warn(f"{p}: unreadable cache entry ({type(e).__name__}); recomputing", stacklevel=2)
            return None

    def put(self, kind: str, key: str, obj, parts: dict | None = None) -> Path:
        import torch

        p = self.path(kind, key)
        atomic_write(p, lambda f: torch.save(obj, f))
        if parts is not None:
            atomic_write_text(p.with_suffix(".json"), json.dumps(parts, indent=1, default=str))
        return p

    def get_or_make(self, kind: str, parts: dict, make: Callable[[], object],
                    code: Iterable[str | ModuleType] = ()) -> tuple[object, bool]:
        """(artefact, hit): the stored artefact for ``parts`` and ``code``, made and stored on a miss."""
        key = self.key(parts, code)
        obj = self.get(kind, key)
        if obj is not None:
            self.hits += 1
            return obj, True
        self.misses += 1
        obj = make()
        self.put(kind, key, obj, parts)
        return obj, False
