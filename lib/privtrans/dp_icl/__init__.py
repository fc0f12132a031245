"""Differentially private in-context learning with a linear attention head (NoisyHead).

- ``task``: the data model, the features Z, the ridge oracle Gamma* and the excess risk;
- ``constants``: every figure's hyper-parameters, as the authors' code sets them;
- ``noisyhead``: Algorithm 1 (clipping, projections, noisy full-batch GD);
- ``accounting``: the paper's basic composition and zCDP, opacus RDP/PRV and exact GDP for its noise;
- ``baselines``: DP-ridge (App. B) and opacus DP-SGD (Fig. 5);
- ``text``: news articles turned into prompts (the articles: ``privtrans.shared.datasets.news_articles``);
- ``experiments``: one Monte-Carlo repetition per figure with common random numbers, and the method labels;
- ``reference``: the authors' numbers (data/dp_icl/paper_values.csv), matched to ours setting by setting;
- ``plots``: the chapter's curves, overlays and per-epsilon panels;
- ``readouts``: what each notebook records, and every comparison its claims read.
"""

from . import accounting, baselines, constants, experiments, noisyhead, task  # noqa: F401
