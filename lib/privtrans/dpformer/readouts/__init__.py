"""What each DPFormer notebook records: its experiment's output in, the dict of recorded values out.

One module per table or figure the notebooks record (``long_tail``: Figure 5; ``phantom``: Claim 3.1
and Figure 3; ``grid``: Figure 2; ``tables``: Tables 1 and 2; ``premise``: the premise notebooks;
``attention``: Figures 4 and 9), over two shared ones (``runs``: a run table read per method, ε
and seed; ``curves``: training curves). A notebook ends with ``nb.record(**readouts.<experiment>(...))``;
every value that a claim in ``data/dpformer/claims*.yaml`` reads comes from here, and so does every
comparison behind it.

A method, ε, seed or row that the input lacks never turns into 0 or a silent pass. Where a profile
may leave it out on purpose (a method or ε not trained) the value is None, and the claims engine
reports the claim as not judged; where the input contradicts itself (a grid cell without a run, a
table without its required columns) a ValueError names what is missing.

A seed never vanishes from a comparison: every paired interval is taken over the seeds (or (ε, seed)
runs, or grid cells) planned for it, with None where one side lacks a value (a failed or diverged run,
a NaN), so that its ``planned`` count (``privtrans.book.paired``) says how many were lost and the
claims engine counts them.

A gate (a claim's precondition) reads an arm the claim does not compare: the non-private reference, or
a DP arm outside the comparison, against MostPopular (``*_vs_most_popular``), or whether such an arm's
training curve rises (``*_curve_rises``).
"""

# what the notebooks call (``readouts.<experiment>``); the helpers stay in their modules
from .attention import fig4_attention_distraction, fig9_attention_shift  # noqa: F401
from .grid import fig2_sharing_grid  # noqa: F401
from .long_tail import fig5_long_tail  # noqa: F401
from .phantom import (  # noqa: F401
    claim31_phantom_exact,
    fig3_ghost_speed,
    fig3_memory_speed,
    fig3_memory_vs_nonprivate,
    fig3_speed_vs_nonprivate,
)
from .premise import premise_sharing_grid, premise_table  # noqa: F401
from .tables import table1_movielens, table2_amazon_like  # noqa: F401
