"""What each mpc_attention notebook records (the values ``data/mpc_attention/claims.yaml`` reads).

One module per table or figure group (``denominators``: Figures 5-7, notebook 01; ``table1``: Table
1, notebook 02; ``schemes``: Tables 2, 3 and 6, notebook 03; ``tasks``: Tables 4 and 5, notebook
04), over ``by_seed`` (the per-seed values every accuracy comparison pairs). Cost comparisons are
made on rounds and bytes (exact) and on the modelled LAN latency; loopback seconds are recorded but
judge nothing (2 shared cores). Accuracy comparisons are paired 95 % t intervals across seeds
(``privtrans.book.paired``); one seed gives none.
"""

# what the notebooks call (``readouts.<name>``); the helpers stay in their modules
from .denominators import fig5_7_denominators, teacher_metrics  # noqa: F401
from .schemes import GROUPS, lan_seconds, per_head_extension, spu_schemes, tables2_6_schemes  # noqa: F401
from .table1 import table1_attention_cost, table1_spu  # noqa: F401
from .tasks import table4_5_tasks  # noqa: F401
