"""TAFT (tangent Transformers: composition, unlearning, DP fine-tuning): the chapter's models, runs
and readouts.

- ``vit``: a small Vision Transformer with explicit attention, the network TAFT linearises
- ``tangent``: its tangent model, f_w0(x) + J f_w0(x)·Δw in one forward pass, Δ in plain leaf modules
- ``pretrain``: pretraining the ViT on MNIST-5k, the stand-in for an ImageNet-21k checkpoint
- ``data``: the image tasks, all offline (data that PyPI wheels ship, or generators)
- ``losses``: the rescaled square loss (RSL) as the authors' code computes it, and its kin
- ``finetune``: fine-tuning on cached features: TAFT, NLFT, FC; a run's ``FitSpec``
- ``selection``: hyper-parameters as the paper chose them, the best of a grid on a validation split
- ``compose``: training on shards, composition, forgetting; the Soup and SISA baselines
- ``dp``: full-batch DP gradient descent on the tangent Δ or the original weights (Table 3)
- ``peft``: Adapter and LoRA on the tuned block
- ``cnn``, ``cnn_bench``: the small CNN and its linearisation (Table 7) and its cached runs
- ``tangent_cost``: what a tangent model costs per example against the plain one (Table 8)
- ``experiments``: the runs the notebooks share, through the run cache (its source keys them)
- ``tables``: our numbers laid out as the paper's tables (presentation only, keys nothing)
- ``paper``: the paper's numbers, read from the cited files in ``data/taft/``
- ``readouts``: what each notebook records for the claims
"""
