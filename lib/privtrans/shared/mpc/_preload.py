"""Imported once by the forkserver (``runner.run``): torch and the shimmed crypten, *not* initialised,
so that every party process forks with them already loaded."""

import torch  # noqa: F401

from . import compat

compat.module()
