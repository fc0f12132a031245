"""What each dp_icl notebook records: its experiment's output in, the dict of recorded values out.

One module per figure or table the notebooks record (``excess_risk``: Figures 1 and 2;
``early_stopping``: Figure 3 and the U-shape Figure 6 reuses; ``robustness``: Figure 4's grid;
``theorem51``: Theorem 5.1's region in Figure 4; ``dp_sgd``: Figure 5; ``news_text``: Figure 6;
``ridge``: Table 1 and the accountants), over ``repetitions`` (the grid tables and per-repetition
intervals every readout shares) and ``against_authors`` (our values beside the authors'). A notebook
ends with ``nb.record(**readouts.<experiment>(...))``; every value that a claim in
``data/dp_icl/claims.yaml`` reads comes from here, and so does every comparison and threshold
behind it.

Each readout is given the grid its notebook ran (the N, epsilon, T, ... of its profile) and the
runs themselves, one row per Monte-Carlo repetition and setting. A cell of that grid without a
finite, positive mean is a broken experiment, not a smaller one: a ValueError names the cell, so
the notebook stops and its claims are not judged. A value the grid cannot define (a trend over a
single N, a comparison with the authors where no setting overlaps) is None, never 0.

The intervals the claims judge are built on the repetitions, never on means alone, and every cell
keeps the repetitions it planned beside those that gave a value (``planned`` and ``n``): a
repetition with no value is lost, never dropped by joining on what both sides happen to have.
Settings that share a repetition's data and draws (every eps of one N, every T of one curve, the
methods of one repetition) are compared by paired intervals (``paired``); settings that draw their
own repetitions (different N) by the two standard errors (``independent_difference``).
"""

# what the notebooks call (``readouts.<experiment>``) and name; the helpers stay in their modules
from .dp_sgd import fig5_bracket, fig5_dp_sgd  # noqa: F401
from .early_stopping import fig3_early_stopping  # noqa: F401
from .excess_risk import SLOPE_EPS_MIN, fig1_low_dim, fig2_high_dim  # noqa: F401
from .news_text import fig6_news_text  # noqa: F401
from .ridge import accountants, table1_dp_ridge  # noqa: F401
from .robustness import fig4_robustness  # noqa: F401
from .theorem51 import fig4_theorem_region, theorem51_conditions  # noqa: F401
