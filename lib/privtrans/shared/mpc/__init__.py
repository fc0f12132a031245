"""Private (2-party CrypTen) inference for the MERGE chapter.

- ``compat``: the only place that imports crypten (torch-2.13 shims): ``compat.crypten()`` returns
  the imported, initialised module; ``compat.module()`` imports without init; ``compat.load``
- ``runner``: ``run(fn, *args)`` runs a party function as separate OS processes over
  torch.distributed (gloo); ``run_party`` / ``python -m privtrans.shared.mpc.runner`` for two hosts
- ``meter``: ``Meter`` - wall time, rounds and bytes per party around each operation group
- ``plain_gpt``: the tiny word-level GPT (plaintext twin) with the MPC-friendly switches,
  ``VARIANTS`` (the paper's seven), ``merge_block`` (Eq. 10)
- ``layers``: ``SecureGPT`` - the same forward passes and decoding with CrypTensor ops
- ``parties``: party functions (private forward / generation, probes) used by tests and notebooks
- ``cost_model``: closed-form bytes/rounds of private generation (exact vs CrypTen's counter)
- ``experiments``: the cost notebooks' job runner and tables

Importing this package does not import crypten; ``compat`` does that on first use.
"""
