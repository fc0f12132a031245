"""A non-editable install carries everything the library reads: a wheel built from this checkout,
installed into a fresh venv, imports every module and loads every profile table; the claims files
(data/, outside the package) load through it too."""

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHECK = r"""
import pkgutil, importlib, sys
from pathlib import Path
import privtrans
from privtrans.book import chapters, claims, profiles
assert Path(privtrans.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), privtrans.__file__
skip = ("__main__", "privtrans.shared.mpc._preload")  # _preload imports crypten, which this venv lacks
mods = [m.name for m in pkgutil.walk_packages(privtrans.__path__, "privtrans.") if not m.name.endswith(skip)]
for m in mods:
    importlib.import_module(m)
tables = 0
for ch in chapters.KEYS:
    if profiles.table_paths(ch):
        for exp in profiles.experiments(ch):
            for p in chapters.PROFILES:
                profiles.settings(ch, exp, p)
        tables += len(profiles.table_paths(ch))
    claims.load(ch, Path(sys.argv[1]))
print(len(mods), tables)
"""


def test_a_wheel_in_a_fresh_venv_has_the_profile_tables(tmp_path):
    # built from a clean copy: an in-tree build would reuse the editable install's egg-info manifest
    src, dist, venv = tmp_path / "src", tmp_path / "dist", tmp_path / "venv"
    shutil.copytree(REPO / "lib", src / "lib", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(REPO / "pyproject.toml", src / "pyproject.toml")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(dist), str(src)], check=True, cwd=tmp_path)
    (wheel,) = dist.glob("privtrans-*.whl")
    # a venv without its own pip (ensurepip took 7 s), installed into by this environment's pip
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    vpy = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(vpy), "install", "--quiet", "--no-deps", "--no-index",
                    str(wheel)], check=True)
    # the book's dependencies come from this environment's site-packages on PYTHONPATH (its .pth
    # files, the editable install of this checkout among them, are not read from there)
    env = {"PYTHONPATH": sysconfig.get_paths()["purelib"], "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([str(vpy), "-c", CHECK, str(REPO)], capture_output=True, text=True, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    n_modules, n_tables = map(int, proc.stdout.split())
    assert n_modules > 30
    assert n_tables == len(list((REPO / "lib" / "privtrans").glob("*/profile*.yaml")))


def test_the_installed_packages_are_byte_compiled():
    """make env byte-compiles what it installs (compileall, on every core): where
    PYTHONDONTWRITEBYTECODE=1 nothing writes a .pyc later, and every kernel and MPC party would
    compile torch, scipy and pandas again (twice the import time, measured in the Makefile)."""
    import importlib
    import importlib.util

    missing = []
    for name in ("torch", "torch.nn.modules.module", "scipy.stats", "pandas.core.frame", "matplotlib.pyplot"):
        source = importlib.import_module(name).__file__
        if not Path(importlib.util.cache_from_source(source)).is_file():
            missing.append(name)
    assert not missing, (f"no .pyc beside {missing}: install the environment with byte-compiling (make env "
                         "byte-compiles site-packages after pip installs it)")
