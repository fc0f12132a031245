"""The one door through which the book imports CrypTen.

CrypTen 0.4.1 (the last release, installed ``--no-deps``) predates torch 2.13. Three things break
and are patched here, before ``import crypten`` runs, and only once per process:

1. ``crypten/nn/onnx_converter.py`` first tries ``torch.onnx.symbolic_registry`` (gone since
   torch 1.13) and then ``from torch.onnx._internal.registration import registry`` (gone since
   torch 2.9). We register a stub ``torch.onnx._internal.registration`` module that defines
   ``registry``. We deliberately do *not* stub ``torch.onnx.symbolic_registry``: its presence
   switches CrypTen to a code path that writes into ``sym_registry._registry``; the stub keeps
   it on the ``torch.onnx.register_custom_op_symbolic`` path, which still exists.
   Everything else CrypTen imports from torch (``torch.onnx.symbolic_helper``,
   ``torch.onnx.utils``, ``OperatorExportTypes``, ``torch.distributed``) still exists;
   ``torch._six`` is not used by 0.4.1.
2. ``crypten.nn.from_pytorch`` calls ``torch.onnx.export``, which defaults to the dynamo exporter
   since torch 2.9 (needs onnxscript; CrypTen's custom symbolics only apply to the TorchScript
   exporter). We wrap ``torch.onnx.export`` so that ``dynamo=False`` is the default.
3. ``crypten.load`` uses ``torch.load``, whose ``weights_only=True`` default (torch >= 2.6) rejects
   pickled ``MPCTensor`` objects; ``load`` below passes ``weights_only=False``.

And one bug that is not about torch versions: ``FixedPointEncoder.decode`` divides a *negative*
fixed-point integer by ``scale - 1`` instead of ``scale`` before flooring, so a value that lies
less than about |v| steps of 2^-16 above a negative integer -v decodes one too low (-5.99995
reveals as -6.99995). Private results land there at random (their last bits are truncation
noise), so a revealed logit was off by exactly 1.0 in about one private forward in six.
``module()`` replaces ``decode`` with the exact floor-division it intends.

And one cost: CrypTen reads its settings (``cfg.debug.validation_mode`` on every attribute of every
``CrypTensor``, ``cfg.encoder.precision_bits`` on every encoder) through OmegaConf, about 40 µs a
read (1.1 µs through the view). A smoke build's party processes spent 64 of their 233 CPU-s there (py-spy). ``module()``
gives ``crypten.cfg`` reads that ask OmegaConf once per key and configuration (``_ConfigView``);
every write still goes to OmegaConf, and ``temp_override`` and ``load_config`` still replace the
configuration, whose view is then another one.

The book's private models are written with CrypTensor ops (``privtrans.shared.mpc.layers``), not via
ONNX import, because CrypTen 0.4.1 cannot convert LayerNorm, Split or Identity.

Usage::

    from . import compat
    crypten = compat.crypten()          # imported, shimmed and initialised (world size from env)
    cx = crypten.cryptensor(x)
"""

from __future__ import annotations

import functools
import sys
import types
import warnings

_PATCHED = False


def apply_shims() -> None:
    """Make ``import crypten`` work on this torch. Idempotent; safe to call in every process."""
    global _PATCHED
    if _PATCHED:
        return
    import torch
    import torch.onnx

    try:  # torch < 2.9 still has it; then there is nothing to stub
        import torch.onnx._internal.registration  # noqa: F401
    except ImportError:
        stub = types.ModuleType("torch.onnx._internal.registration")
        stub.registry = None  # CrypTen imports the name but never uses it on this path
        stub.__doc__ = "stub registered by privtrans.shared.mpc.compat for crypten 0.4.1"
        sys.modules["torch.onnx._internal.registration"] = stub

    export = torch.onnx.export
    if not getattr(export, "_privtrans_legacy_default", False):

        @functools.wraps(export)
        def export_legacy(*args, **kwargs):
            kwargs.setdefault("dynamo", False)
            return export(*args, **kwargs)

        export_legacy._privtrans_legacy_default = True
        torch.onnx.export = export_legacy
    _PATCHED = True


def _exact_decode(self, tensor):
    """Fixed point -> float: floor(t / scale) + (t mod scale) / scale, for either sign."""
    if tensor is None:
        return None
    import torch

    if self._scale > 1:
        dividend = torch.div(tensor, self._scale, rounding_mode="floor")
        remainder = tensor - dividend * self._scale  # in [0, scale)
        return (dividend.float() + remainder.float() / self._scale).data
    return tensor.data


class _ConfigView:
    """One node of a CrypTen configuration (an OmegaConf ``DictConfig``), read through: each key is
    asked of OmegaConf once and then kept as an attribute of the view (a plain attribute read); a
    write goes to the node and drops the kept value."""

    def __init__(self, node):
        object.__setattr__(self, "_node", node)

    def __getattr__(self, key):  # only for a key not kept yet
        from omegaconf import DictConfig

        value = getattr(self._node, key)
        if isinstance(value, DictConfig):
            value = _ConfigView(value)
        object.__setattr__(self, key, value)
        return value

    def __setattr__(self, key, value):
        setattr(self._node, key, value)
        self.__dict__.pop(key, None)


_VIEWS: list = []  # (configuration, its view), the latest first: temp_override swaps two of them back and forth


def _view_of(config) -> _ConfigView:
    for i, (c, view) in enumerate(_VIEWS):
        if c is config:
            if i:
                _VIEWS.insert(0, _VIEWS.pop(i))
            return view
    view = _ConfigView(config)
    _VIEWS.insert(0, (config, view))  # holding the configuration keeps its id from being reused
    del _VIEWS[8:]
    return view


def _fast_reads(cfg) -> None:
    """Give ``cfg`` (``crypten.cfg``) reads through ``_view_of`` its current configuration."""
    base = type(cfg)
    if getattr(base, "_privtrans_fast_reads", False):
        return

    own = frozenset(dir(base)) | set(vars(cfg))  # methods and ``config``; any other name is a setting

    def __getattribute__(self, name):
        if name in own:
            return object.__getattribute__(self, name)
        config = object.__getattribute__(self, "config")
        value = _VIEWS[0][1] if _VIEWS and _VIEWS[0][0] is config else _view_of(config)
        for key in name.split("."):
            value = getattr(value, key)
        return value

    cfg.__class__ = type(base.__name__, (base,), {"__getattribute__": __getattribute__,
                                                  "_privtrans_fast_reads": True, "__doc__": base.__doc__})


def module():
    """The ``crypten`` module, imported after the shims (not initialised), decode fixed."""
    apply_shims()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypten as _crypten
        from crypten.encoder import FixedPointEncoder
    _fast_reads(_crypten.cfg)
    if FixedPointEncoder.decode is not _exact_decode:
        FixedPointEncoder._crypten_decode = FixedPointEncoder.decode
        FixedPointEncoder.decode = _exact_decode
    return _crypten


def crypten(init: bool = True, verbose_comm: bool = True):
    """The ``crypten`` module, shimmed and (by default) initialised in this process.

    Outside a party process (no RANK/WORLD_SIZE in the environment) ``crypten.init()`` starts a
    one-party world, which is what single-process tests of fixed-point numerics need.
    ``verbose_comm`` turns on CrypTen's byte/round logging (``cfg.communicator.verbose``), which
    ``privtrans.shared.mpc.meter`` reads.
    """
    cr = module()
    if init and not cr.is_initialized():
        cr.init()
    if verbose_comm:
        cr.cfg.communicator.verbose = True
    return cr


def load(path, **kwargs):
    """``crypten.load`` with the pre-2.6 ``torch.load`` behaviour it was written for."""
    import torch

    cr = module()
    kwargs.setdefault("load_closure", functools.partial(torch.load, weights_only=False))
    return cr.load(path, **kwargs)


def comm():
    """CrypTen's communicator of this process (after ``crypten()``)."""
    return module().communicator.get()
