"""What each TAFT notebook records for the claims (``nb.record(**readouts.<notebook>(...))``).

One module per group of tables the notebooks record (``finetuning``: pretraining, Table 1 and
Table 3; ``shards``: composition, forgetting and tuning on shards, Tables 2, 7, 10 and 11, Figures
1, 3 and 4; ``ablations``: Figure 2, Tables 9 and 12; ``timing``: Table 8), over ``by_seed`` (the
per-seed values every comparison pairs).

Every stochastic comparison is judged across seeds on paired differences with a 95 % t interval
(``privtrans.book.paired``): "A beats B" holds only when the interval of A − B lies above the
margin. Accuracies are fractions in [0, 1] here (the paper prints percent). A missing run gives
None (not judged), never 0.
"""

# what the notebooks call (``readouts.<notebook>``); the helpers stay in their modules
from .ablations import fig2a_losses, fig2bc_linearisation, pgd_variant, table9_pretraining, table12_pgd  # noqa: F401
from .finetuning import dp_finetuning, pretraining, table1_finetuning  # noqa: F401
from .shards import (  # noqa: F401
    composition,
    fig4_weight_change,
    forgetting,
    shard_tuning,
    table7_linearised_cnn,
    table11_peft,
)
from .timing import cost  # noqa: F401
