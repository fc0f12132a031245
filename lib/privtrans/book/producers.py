"""Which readout function computed each recorded value, so a claim row links to its code.

A notebook computes its headline numbers with its chapter's ``readouts`` functions and records them
(``nb.record(**rec)``); the claims then read them by name. ``watch`` wraps the public functions of a
readouts module so every dict they return is remembered; ``producers_of`` then names, for each
recorded key, the watched function that returned that very object under that key (the latest such
call: a readout that passes on another's value is the one the notebook called). A value built in the
notebook itself, or recorded under another name, gets no producer: no link rather than a wrong one.

Why at run time and not by reading the source: the same key names ("epsilons", "cells") are returned
by several readouts of a chapter, so only the call that was made can tell which one it was.

The call's arguments are remembered too (:func:`calls_of`): the records a readout read (per-seed
runs, curves, maps) are what the whole-path controls (:mod:`privtrans.book.controls`) generate again
with a known truth, and put through that very readout.
"""

from __future__ import annotations

import functools
import inspect
from types import ModuleType

_RETURNED: list[tuple[str, dict, tuple, dict]] = []  # (module.function, the dict it returned, args, kwargs)
_WATCHED = "__privtrans_watched__"


def watch(module: ModuleType) -> ModuleType:
    """Wrap ``module``'s public functions (defined in it, not imported) in place; idempotent. A
    package (readouts split by the table they serve) is watched whole: each submodule's functions
    are wrapped, and every name that re-exports or imports one of them (the package's, a sibling's)
    is pointed at the same wrapper."""
    if getattr(module, _WATCHED, False):
        return module
    # a package's submodules are those its __init__ imported (each is then an attribute of it): no
    # module name is built here, so the import contracts see every import (tests/test_layers.py)
    mods = [module] + [m for m in vars(module).values()
                       if isinstance(m, ModuleType) and m.__name__.startswith(module.__name__ + ".")]
    wrappers = {}
    for mod in mods:
        for name, fn in list(vars(mod).items()):
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != mod.__name__:
                continue
            wrappers[id(fn)] = _remembering(fn, f"{mod.__name__}.{name}")
            setattr(mod, name, wrappers[id(fn)])
    for mod in mods:
        for name, fn in list(vars(mod).items()):
            if id(fn) in wrappers:
                setattr(mod, name, wrappers[id(fn)])
        setattr(mod, _WATCHED, True)
    return module


def _remembering(fn, qualname: str):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        if isinstance(out, dict):
            _RETURNED.append((qualname, out, args, kwargs))
        return out

    return wrapper


def producers_of(values: dict) -> dict[str, str]:
    """{key: "module.function"} for the keys of ``values`` a watched function returned, as that object."""
    return {key: call[0] for key, call in calls_of(values).items()}


def calls_of(values: dict) -> dict[str, tuple[str, tuple, dict]]:
    """{key: (module.function, args, kwargs)}: the watched call that returned each value of ``values``
    as that object (the latest such call), with the arguments it was given."""
    out = {}
    for key, v in values.items():
        for qualname, returned, args, kwargs in reversed(_RETURNED):
            if key in returned and returned[key] is v:
                out[key] = (qualname, args, kwargs)
                break
    return out


def forget() -> None:
    """Drop what was remembered (a new notebook session starts with none)."""
    _RETURNED.clear()
