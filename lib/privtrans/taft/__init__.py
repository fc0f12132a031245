"""TAFT (tangent Transformers: composition, unlearning, DP fine-tuning). The chapter is not built yet;
what exists is its core, tested:

- ``vit``: a small ViT with explicit attention (the network TAFT linearises);
- ``tangent``: its tangent model, f_w0(x) + J f_w0(x)·Δw in one forward pass, Δ in plain leaf modules.
"""
