"""DPFormer (ICLR 2024 submission; ICML 2024 "Delving into Differentially Private Transformer"): the
chapter's sequential recommendation, Re-Attention and the Phantom Clipping experiments.

- ``data``: SASRec preprocessing (k-core, chronological order, leave-one-out) and long-tail statistics
- ``synthetic``: a deterministic, sparse, Zipf-tailed session generator that stands in for Amazon
- ``sasrec``: the SASRec-style Transformer, tied or untied, with the hook Re-Attention uses
- ``baselines``: GRU4Rec-style GRU and LSTM next-item models (tied embedding, as in the paper)
- ``metrics``: full-ranking NDCG@10 / HIT@10 (Krichene & Rendle 2020)
- ``train``: one training loop for every method, non-private or DP-SGD with the RDP accountant
- ``runs``: trained runs through the book's run cache, keyed by spec, data and training code
- ``experiments``: datasets by name, tables and grids of runs, the paper-style tables
- ``readouts``: what each notebook records, from its experiment's output (the claims read these)
- ``figures``: the plots of Figures 2, 5, 6, 7 and the Table 1/2 bars
- ``moments``: moment-matched propagation of DP noise through layers (Eq. 7, 8; Table 3)
- ``reattention``: Re-Attention, Figure 4's Monte Carlo, Figure 9's attention shift
- ``claim31``: the Claim 3.1 checks of Phantom norms against brute force and opacus
- ``opacus_compare``: what opacus 1.6 does with a tied embedding (hooks, ghost, functional tie)
- ``ghost_baseline``: the paper-style Ghost Clipping baseline of Figure 3
- ``efficiency``: Figure 3's step time and peak memory per method, measured and modelled
"""
