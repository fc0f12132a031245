"""MPC-friendly attention (freeDiv / 2Quad, Quad GeLU, distillation): the mpc_attention chapter.

- ``normalisers``: the six attention normalisers, one formula each for every back-end, and their
  names and constants; ``encoder_ops``: the encoder's forward, written once; ``ops``: what each
  back-end passes them (torch and CrypTen tensors; SPU's JAX arrays)
- ``attention``: the normalisers and activations as the chapter's torch code names them, and the
  plaintext check of 2ReLU's stabiliser
- ``encoder``: ``TinyEncoder``, the trainable weights of that forward
- ``fit``: f(n) = a n^b from a model's denominators (all layers; per layer and head)
- ``data``: the three stand-in tasks from VADER's snippets (data/mpc_attention)
- ``train``: teacher training and the two-stage distillation
- ``secure``: party functions (secure encoder forward, one normaliser's cost; 2PC and 3PC)
- ``normaliser_cost``: Table 1 measurements and the LAN/WAN latency model
- ``spu``, ``spu_worker``: SecretFlow SPU (Tables 1, 2, 3, 6), in its own environment
- ``experiments``: cached teachers and students; ``readouts``: what each notebook records
"""
