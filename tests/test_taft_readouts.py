"""privtrans.taft.readouts as a whole: NULL_TESTED lists every comparison the per-module test files feed a
null through its readout (tests/test_claims.py requires the list complete)."""

from __future__ import annotations


# every "A beats B" claim (an interval against a margin >= 0) whose readout is fed A = B plus noise in
# the null tests of tests/test_taft_readouts_*.py; tests/test_claims.py requires the list to be complete
NULL_TESTED = {
    "table1_taft_further_behind_far", "table1_taft_beats_fc", "table1_taft_k_beats_fc",
    "table3_dp_tangent_beats_nonlinear", "table3_dp_full_nlft_below_fc",
    "table2_taft_beats_soup", "table2_gap_grows_with_n", "fig1_taft_beats_sisa",
    "table7_taft_beats_linearised_cnn", "table7_taft_beats_linearised_cnn_composed",
    "table10_taft_beats_soup_textures", "table10_gap_grows_with_n",
    "table11_taft_beats_adapter", "table11_taft_beats_lora",
    "fig2a_rsl_beats_ce", "fig2a_rsl_beats_mse", "fig2b_reset_last_block_helps", "fig2c_cls_helps_far_task",
    "table12_rsl_better_in_small_ball", "table12_ce_better_in_large_ball",
    "table9_cls_beats_mae", "table9_small_cls_beats_large_mae", "table9_larger_is_better",
    "table9_more_pretraining_data_helps", "fig1c_retraining_speedup",
}
