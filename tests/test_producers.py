"""privtrans.book.producers: a recorded value names the readout function that computed it."""

import json
import types

import pytest

from privtrans.book import producers, session
from privtrans.book.claims import made_by


def _module():
    m = types.ModuleType("privtrans.fake.readouts")
    exec(
        "from math import sqrt\n"
        "def _inner(x):\n    return {'cells': [x], 'held': x > 0}\n"
        "def table(x):\n    out = _inner(x)\n    return {**out, 'mean': float(x)}\n"
        "def figure(x):\n    return {'cells': [x, x]}\n",
        m.__dict__,
    )
    return m


def test_each_recorded_key_names_the_readout_that_returned_that_object():
    producers.forget()
    m = producers.watch(_module())
    assert producers.watch(m) is m and m.sqrt.__module__ == "math"  # idempotent; imports left alone
    t, f = m.table(2), m.figure(3)
    got = producers.producers_of({"cells": t["cells"], "mean": t["mean"], "mine": 1.0})
    assert got == {"cells": "privtrans.fake.readouts.table", "mean": "privtrans.fake.readouts.table"}
    # the same key from another readout: the object decides, not the name
    assert producers.producers_of({"cells": f["cells"]}) == {"cells": "privtrans.fake.readouts.figure"}
    # a value built in the notebook under a readout's key name gets no producer
    assert producers.producers_of({"cells": [2]}) == {}
    producers.forget()
    assert producers.producers_of({"cells": t["cells"]}) == {}


def test_a_readouts_package_is_watched_through_its_submodules(tmp_path, monkeypatch):
    """Readouts split by table: the notebook calls the package's re-export, a sibling calls the other
    module's function; both reach the one wrapper, named after the module that defines it."""
    pkg = tmp_path / "fakepkg_readouts"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .tables import table  # noqa: F401\n")
    (pkg / "common.py").write_text("def cells(x):\n    return {'cells': [x]}\n")
    (pkg / "tables.py").write_text("from .common import cells\n"
                                   "def table(x):\n    return {**cells(x), 'mean': float(x)}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fakepkg_readouts

    producers.forget()
    producers.watch(fakepkg_readouts)
    from fakepkg_readouts import common, tables

    assert fakepkg_readouts.table is tables.table and tables.cells is common.cells
    t = fakepkg_readouts.table(2)
    got = producers.producers_of({"cells": t["cells"], "mean": t["mean"]})
    assert got == {"cells": "fakepkg_readouts.tables.table", "mean": "fakepkg_readouts.tables.table"}
    assert producers.producers_of({"cells": common.cells(3)["cells"]}) == {"cells": "fakepkg_readouts.common.cells"}
    producers.forget()


def test_a_session_writes_made_by_and_a_claim_reads_its_readouts(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVTRANS_ROOT", str(tmp_path))
    (tmp_path / "_config.yml").write_text("")
    nb = session.start("dp_icl", "fig1_low_dim", "smoke", 0)
    from privtrans.dp_icl import readouts

    assert getattr(readouts, "__privtrans_watched__", False)
    name = next(n for n in vars(readouts) if not n.startswith("_") and callable(getattr(readouts, n))
                and getattr(getattr(readouts, n), "__wrapped__", None))
    # the readouts package re-exports what its modules define (privtrans.dp_icl.readouts.<module>)
    assert getattr(readouts, name).__wrapped__.__module__.startswith("privtrans.dp_icl.readouts.")
    nb.record(plain=1.5)
    out = nb.finish()
    assert out["made_by"] == {}
    res = {"made_by": {"a": "privtrans.dp_icl.readouts.f", "b": "privtrans.dp_icl.readouts.g"}}
    claim = {"notebook": "fig1", "value": "fig1.a", "interval": "fig1.b.x", "predicate": None}
    assert made_by(claim, res) == ["privtrans.dp_icl.readouts.f", "privtrans.dp_icl.readouts.g"]
    assert made_by({"notebook": "fig1", "value": "other.a"}, res) == []
    assert json.loads((nb.outdir / "results.json").read_text())["made_by"] == {}


@pytest.mark.parametrize("bad", ["nope"])
def test_start_still_rejects_an_unknown_chapter(bad):
    with pytest.raises(ValueError, match="chapter"):
        session.start(bad, "x", "smoke", 0)
