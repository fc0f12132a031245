"""privtrans.mpc_attention.encoder in plaintext: TinyEncoder's forward equals the same network of torch.nn
modules, and ScaleAttn is the paper's Eq. 10 while the distilled scores stay QK^T/sqrt(d)."""

import torch

from privtrans.mpc_attention import attention, encoder


def test_encoder_forward_matches_torch_layers():
    """The dict-of-weights forward equals the same network built from torch.nn modules."""
    torch.manual_seed(0)
    cfg = encoder.EncoderConfig(vocab_size=30, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=12)
    m = encoder.TinyEncoder(cfg)
    for p in m.parameters():  # non-trivial weights
        torch.nn.init.normal_(p, std=0.3)
    ids = torch.randint(0, 30, (2, 12))
    mask = torch.ones(2, 12)
    mask[1, 7:] = 0
    out = m(ids, mask)
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    h = m.ln0(m.embed(ids))
    for lay in m.layers:
        with torch.no_grad():
            mha.in_proj_weight.copy_(torch.cat([lay["q"].weight, lay["k"].weight, lay["v"].weight]))
            mha.in_proj_bias.copy_(torch.cat([lay["q"].bias, lay["k"].bias, lay["v"].bias]))
            mha.out_proj.weight.copy_(lay["o"].weight)
            mha.out_proj.bias.copy_(lay["o"].bias)
        a, _ = mha(h, h, h, key_padding_mask=mask == 0)
        h = lay["ln1"](h + a)
        h = lay["ln2"](h + lay["f2"](torch.nn.functional.gelu(lay["f1"](h), approximate="tanh")))
    pooled = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
    assert (out["logits"] - m.head(pooled)).abs().max() < 1e-4


def test_scaling_attention_is_the_papers_eq_10():
    """ScaleAttn(Q, K, V) = (1/n) QK^T V (eq. 10): no 1/sqrt(d), unlike every other normaliser;
    the scores the encoder returns (what stage 1 distils) stay QK^T/sqrt(d) for every attention."""
    torch.manual_seed(0)
    cfg = encoder.EncoderConfig(vocab_size=30, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=12)
    teacher = encoder.TinyEncoder(cfg)
    for p in teacher.parameters():
        torch.nn.init.normal_(p, std=0.3)
    ids = torch.randint(0, 30, (2, 12))
    mask = torch.ones(2, 12)
    mask[1, 7:] = 0
    n = mask.sum(-1)[:, None, None, None]
    lay = teacher.layers[0]
    h = teacher.ln0(teacher.embed(ids))
    split = lambda t: t.view(2, 12, 2, 8).permute(0, 2, 1, 3)  # noqa: E731
    qk = split(lay["q"](h)) @ split(lay["k"](h)).transpose(-1, -2)
    keys = mask[:, None, None, :]
    with torch.no_grad():
        for att in attention.ATTENTIONS:
            m = teacher.converted(att, "gelu", attention.PAPER_FITS.get(attention.FREEDIV.get(att)))
            out = m(ids, mask)
            assert (out["scores"][0] - qk / 8 ** 0.5).abs().max() < 1e-5, att
            if att == "scaling":
                assert (out["probs"][0] - qk * keys / n).abs().max() < 1e-5
    assert attention.UNSCALED == ("scaling",)
