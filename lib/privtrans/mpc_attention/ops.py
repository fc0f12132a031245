"""The operations the chapter's formulas need, once per back-end: what makes one formula run on
torch tensors, CrypTen shares and SecretFlow SPU's JAX arrays.

``normalisers.normalise`` (the six attention normalisers), ``normalisers.denominator`` and
``encoder_ops.forward`` (the whole encoder) are written once against an ``ops`` object; each
back-end passes its own, as array-API code does:

- ``TensorOps`` (``TENSOR``): the methods ``torch.Tensor`` and CrypTen's ``MPCTensor`` share, with
  CrypTen's reciprocal told its input is positive and its inverse square root where the input is a
  share. Training, distillation, the fits, and the secure runs (``secure.py``) use it;
- ``JaxOps``: jax.numpy, which SPU compiles into its protocol (``spu_worker``).

This module imports neither torch nor JAX (each is imported where its ops run), so SPU's own
environment (numpy < 2, no torch) imports it. Public quantities (the key count n, f(n), 1/n) are
torch tensors under a key mask and plain numbers without one; ``constants`` turns a pair (a, b) of
f(n) into numbers of the back-end's kind.
"""

from __future__ import annotations

from privtrans.shared.activations import Methods


def is_secure(t) -> bool:
    """Whether ``t`` is a CrypTen share rather than a plaintext tensor."""
    return hasattr(t, "get_plain_text")


class TensorOps(Methods):
    """torch tensors and CrypTen shares: the tensor methods both have (``square``, ``tanh`` and
    ``relu`` are the activations' own, ``privtrans.shared.activations.Methods``)."""

    @staticmethod
    def exp(x):
        return x.exp()

    @staticmethod
    def rowsum(x):
        return x.sum(-1, keepdim=True)

    @staticmethod
    def rowmax(x):
        return x.max(-1, keepdim=True)[0]

    @staticmethod
    def rowmean(x):
        return x.mean(-1, keepdim=True)

    @staticmethod
    def reciprocal_pos(s):
        """1/s for s > 0: CrypTen skips its sign comparison when told the input is positive."""
        if is_secure(s):
            from privtrans.shared.mpc import compat

            with compat.module().cfg.temp_override({"functions.reciprocal_all_pos": True}):
                return s.reciprocal()
        return s.reciprocal()

    @staticmethod
    def inv_sqrt(v):
        return v.inv_sqrt() if is_secure(v) else v.rsqrt()

    @staticmethod
    def matmul(a, b):
        return a.matmul(b)

    @staticmethod
    def t(x):
        return x.transpose(-1, -2)

    @staticmethod
    def heads(x, h: int, dh: int):  # (B, T, d) -> (B, H, T, dh)
        return x.view(x.size(0), x.size(1), h, dh).permute(0, 2, 1, 3)

    @staticmethod
    def merge(x, d: int):  # (B, H, T, dh) -> (B, T, d)
        return x.permute(0, 2, 1, 3).reshape(x.size(0), x.size(2), d)

    @staticmethod
    def mask(mask01):
        import torch

        return mask01.to(torch.float32)

    @staticmethod
    def key_mask(mask01):
        """The public 0/1 token mask (B, T) as the key mask of attention scores, (B, 1, 1, T)."""
        import torch

        return mask01.to(torch.float32)[:, None, None, :]

    @staticmethod
    def pool(h, mask01):
        """The mean of the real tokens' states (B, T, d) -> (B, d); their number is public."""
        import torch

        mask01 = mask01.to(torch.float32)
        n = mask01.sum(-1)[:, None]
        return (h * mask01[:, :, None]).sum(1) * (1.0 / n)

    @staticmethod
    def constants(const, n):
        """(a, b) as float32 tensors on ``n``'s device, broadcasting over (..., H, n_q, 1): one pair
        for every head (the paper), or one per head ((H,) each, its future work)."""
        import torch

        device = getattr(n, "device", None)  # n is a number where no key mask is given
        a, b = (torch.as_tensor(v, dtype=torch.float32, device=device) for v in const)
        if a.dim() == 1:
            a, b = a.view(-1, 1, 1), b.view(-1, 1, 1)
        return a, b

    @staticmethod
    def layer_const(const, layer: int):
        """f(n)'s (a, b) for one layer: the same pair everywhere (the paper), per head ((H,) lists),
        or per layer and head ((L, H) nested lists)."""
        if const is None:
            return None
        import torch

        a, b = (torch.as_tensor(v, dtype=torch.float32) for v in const)
        return (a[layer], b[layer]) if a.dim() == 2 else (a, b)


class JaxOps:
    """jax.numpy: plaintext, or traced by SPU into its protocol's exp, max and reciprocal. Only
    unpadded inputs (no key mask): SPU's runs have none."""

    def __init__(self):
        import jax
        import jax.numpy as jnp

        self.jax, self.jnp = jax, jnp

    def exp(self, x):
        return self.jnp.exp(x)

    def relu(self, x):
        return self.jnp.maximum(x, 0.0)

    @staticmethod
    def square(x):
        return x * x

    def tanh(self, x):
        return self.jnp.tanh(x)

    def rowsum(self, x):
        return self.jnp.sum(x, axis=-1, keepdims=True)

    def rowmax(self, x):
        return self.jnp.max(x, axis=-1, keepdims=True)

    def rowmean(self, x):
        return self.jnp.mean(x, axis=-1, keepdims=True)

    @staticmethod
    def reciprocal_pos(s):
        return 1.0 / s

    def inv_sqrt(self, v):
        return self.jax.lax.rsqrt(v)

    @staticmethod
    def matmul(a, b):
        return a @ b

    def t(self, x):
        return self.jnp.swapaxes(x, -1, -2)

    def heads(self, x, h: int, dh: int):  # (T, d) -> (H, T, dh)
        return self.jnp.transpose(x.reshape(x.shape[0], h, dh), (1, 0, 2))

    def merge(self, x, d: int):  # (H, T, dh) -> (T, d)
        return self.jnp.transpose(x, (1, 0, 2)).reshape(x.shape[1], d)

    def pool(self, h, mask01):
        if mask01 is not None:
            raise ValueError("SPU's runs are unpadded: no token mask")
        return self.jnp.mean(h, axis=-2, keepdims=True)  # (1, d): every token is real

    @staticmethod
    def constants(const, n):
        return tuple(float(v) for v in const)

    @staticmethod
    def layer_const(const, layer: int):
        return const


TENSOR = TensorOps()
