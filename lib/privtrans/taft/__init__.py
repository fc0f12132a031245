"""TAFT (tangent Transformers: composition, unlearning, DP fine-tuning). Not reproduced yet."""
