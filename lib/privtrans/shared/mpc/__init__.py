"""Private (2-party CrypTen) inference of the tiny GPT and encoder-decoder twins.

- ``compat``: the only place that imports crypten (torch-2.13 shims): ``compat.crypten()`` returns
  the imported, initialised module; ``compat.module()`` imports without init; ``compat.load``
- ``runner``: ``run(fn, *args)`` runs a party function as separate OS processes over
  torch.distributed (gloo); ``run_party`` / ``python -m privtrans.shared.mpc.runner`` for two hosts
- ``meter``: ``Meter`` - wall time, rounds and bytes per party around each operation group
- ``layers``: ``SecureGPT`` - the forward passes and decoding of ``privtrans.shared.models.plain_gpt``
  with CrypTensor ops
- ``secure_encdec``: the same for ``privtrans.shared.models.plain_encdec``
- ``parties``: party functions (private forward / generation, probes) used by tests and notebooks
- ``closed_form_cost``: closed-form bytes/rounds of private generation (exact vs CrypTen's counter)

Importing this package does not import crypten; ``compat`` does that on first use.
"""
