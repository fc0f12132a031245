"""Small models shared by chapters: the tiny word-level GPT (``plain_gpt``) and encoder-decoder
(``plain_encdec``), plaintext twins of the secure models in ``privtrans.shared.mpc``."""
