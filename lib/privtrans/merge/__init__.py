"""The MERGE chapter (Liang et al., AAAI-24): private generation cost (Figure 1, Tables 1-2,
Figure 4) and the quality of the re-trained models (Table 3, Figures 5 and 6). The private
mechanisms it measures are shared (``privtrans.shared.mpc``, ``privtrans.shared.models``).

- ``cost_experiments``: the cost notebooks' jobs under 2-party CrypTen and the tables built from them
- ``data``: offline task stand-ins (synthetic dialog acts, synthetic concept sets, chatterbot-corpus pairs)
- ``metrics``: ROUGE-L, chrF++, NIST, METEOR (exact + stem) from their libraries, and the BERTScore proxy
- ``train``: teacher and student training of ``privtrans.shared.models.plain_gpt.TinyGPT``, run cache, decoding
- ``quality_experiments``: Table 3 and the Figure 5 and 6 sweeps the quality notebooks show
- ``private``: a trained model generating under 2-party MPC, compared with plaintext
- ``readouts``: what each notebook records for the claims, from its experiment's output
"""
