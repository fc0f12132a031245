"""The text-quality side of the MERGE chapter (Table 3, Figures 5 and 6, private generation).

- ``data``: offline task stand-ins (synthetic dialog acts, synthetic concept sets, chatterbot-corpus)
- ``metrics``: ROUGE-L, chrF++, NIST, METEOR (exact + stem), and the BERTScore proxy
- ``train``: teacher and student training of ``privtrans.shared.models.plain_gpt.TinyGPT``, cache, decoding
- ``experiments``: the tables and sweeps the notebooks show
- ``private``: a trained model generating under 2-party MPC, compared with plaintext
"""
