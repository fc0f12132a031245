"""What each MERGE notebook records: its experiment's output in, the dict for ``nb.record`` out.

One module per table or figure the notebooks record (``time_breakdown``: Figure 1; ``cost``: Tables
1-2, Figure 4 and the private generation; ``retraining``: Figure 6; ``embedding_noise``: Figure 5;
``table3``: Table 3), over ``missing`` (what a readout does when a result is absent). Every value
that a claim in ``data/merge/claims*.yaml`` reads is made here, so the comparisons the claims rest on
(which variant is fastest, which row is closer to the teacher, what counts as stable) are written
once and tested on small hand-made tables (``tests/test_merge_readouts_*.py``).

Missing data never becomes a number. A run or row that the experiment should have produced and did
not raises ``MissingResult``; a value that cannot be computed from what exists (the metrics of a
model whose training diverged, a ratio over zero) is None, and so is every aggregate over it: the
claims engine then reports the claim as not judged.
"""

# what the notebooks call (``readouts.<experiment>``) and name; the helpers stay in their modules
from .cost import fig4_scaling, private_generation, tables12_cost  # noqa: F401
from .embedding_noise import MID_MSE, fig5_embedding_noise  # noqa: F401
from .missing import MissingResult  # noqa: F401
from .retraining import CONVERGED_BELOW, fig6_retraining  # noqa: F401
from .table3 import paper_table3_text_vs_table, table3_quality, table3_seeds, table3_teachers  # noqa: F401
from .time_breakdown import fig1_time_breakdown, fig1_time_rounds, fig1a_speedups  # noqa: F401
