"""privtrans: the shared library under the notebooks of *Private Transformers, Reproduced*.

The notebooks hold the argument (text, parameters, figures); everything a test checks or two
notebooks need lives here. Sub-packages are split by mechanism, as opacus does:

- ``profiles``: what ``smoke`` / ``ci`` / ``paper`` mean for every experiment (tables in ``profile_tables/``)
- ``session``: the per-notebook context: validated parameters, seeding, device, saved figures/tables, results JSON
- ``claims``: a chapter's claims file evaluated against its notebooks' results
- ``plotting``: one seaborn theme
- ``pipeline``: papermill execution with a cache, summary.json, generated pages, the Jupyter Book build
- chapter packages (``icl``, ``dp``, ``mpc``, ...) hold the methods themselves
"""

__version__ = "0.1.0"

CHAPTERS = ("dpformer", "taft", "merge", "dp_icl", "mpc_attention")
PROFILES = ("smoke", "ci", "paper")
