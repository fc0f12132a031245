"""Differentially private in-context learning with a linear attention head (NoisyHead).

Modules: ``task`` (data model, Gamma features, ridge oracle, excess risk), ``constants`` (every
figure's hyper-parameters), ``noisyhead`` (Algorithm 1), ``accounting`` (basic composition, zCDP,
opacus RDP/PRV, exact), ``baselines`` (DP-ridge, opacus DP-SGD), ``text`` (news-article prompts),
``experiments`` (one Monte-Carlo repetition per figure, with common random numbers).
"""

from . import accounting, baselines, constants, experiments, noisyhead, task  # noqa: F401
