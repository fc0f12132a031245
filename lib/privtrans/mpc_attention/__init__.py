"""MPC-friendly attention (freeDiv / 2Quad, Quad GeLU, distillation): the mpc_attention chapter.

- ``attention``: the six attention normalisers and three activations, one formula each for torch
  and CrypTen shares
- ``encoder``: a small post-LN BERT-style encoder, ``forward`` written once on a weight dict
- ``fit``: f(n) = a n^b from a model's denominators (all layers; per layer and head)
- ``data``: the three stand-in tasks from VADER's snippets (data/mpc_attention)
- ``train``: teacher training and the two-stage distillation
- ``secure``: party functions (secure encoder forward, one normaliser's cost; 2PC and 3PC)
- ``cost``: Table 1 measurements and the LAN/WAN latency model
- ``normalisers``, ``spu``, ``spu_worker``: Table 1 in SecretFlow SPU, in its own environment
  (the six formulas written for JAX, tested equal to ``attention``)
- ``experiments``: cached teachers and students; ``readouts``: what each notebook records
"""
