"""Models shared by the chapters (sequence recommenders for ``dpformer``)."""

from .sasrec import SASRec, per_sample_loss

__all__ = ["SASRec", "per_sample_loss"]
