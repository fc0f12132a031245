"""Sequential recommendation for the DPFormer chapter: data, baselines, metrics, training, cache.

- ``data``: MovieLens-100K read from the installed recbole wheel, 5-core filter, leave-one-out split,
  long-tail statistics (Figure 5)
- ``synthetic``: a deterministic, sparse, Zipf-tailed session generator that stands in for Amazon
- ``baselines``: GRU4Rec-style GRU and LSTM next-item models (tied embedding, as in the paper)
- ``metrics``: full-ranking NDCG@10 / HIT@10 (Krichene & Rendle 2020)
- ``train``: one training loop for every method, non-private or DP-SGD with the RDP accountant
- ``cache``: trained models and metrics on disk, so no model is trained twice in one build
- ``experiments``: datasets by name, grids of runs through the cache, the paper-style tables
- ``figures``: the plots of Figures 2, 5, 6, 7 and the Table 1/2 bars
"""
