"""torch modules as piecewise-linear networks (:class:`fairspec.models.network.PLNet`): the reader
of the chain :func:`fairspec.models.torch_chain.torch_chain` finds forward() to be (nn.Sequential, or a
module calling its children and functional activations in order, scripted or not) -- Linear, ReLU,
Identity, Dropout, Flatten, and a final Sigmoid / Softmax -- with its agreement check: the converted
network against the module (its declared output) on random inputs, within certify's error bound at
the module's precision (float16, float32, float64: ``certify.agreement``), else (mixed types, a check
input outside the float32 / float64 error model) rtol = atol = 1e-4. A spot check behind the structural
one (a forward() that departs from its children only at points it does not draw is refused by
``torch_chain``, not by it). torch is imported inside.
"""

from __future__ import annotations

import numpy as np

from fairspec.models.network import PLNet, UnsupportedModel, _Chain, _make_net, apply_readout, sigmoid

__all__ = ["from_torch"]

_TORCH_SKIP = {"Identity", "Dropout", "Flatten", "AlphaDropout"}


def from_torch(module, index: int | None = None, verify: bool = True, readout=None, pick=None,
               output=None) -> PLNet:
    """Read a torch ``nn.Sequential`` (or a module whose forward() is a plain chain, scripted or not:
    ``torch_chain``, which reads the declared ``output`` of a tuple / dict and raises ``NotAChain``).

    Linear, ReLU, Identity, Dropout, Flatten, and a final Sigmoid / Softmax. With ``verify``, the converted
    net is compared with the module on 64 random inputs (within certify's error bound); a mismatch
    (a forward() that does not apply its children in order) raises :class:`UnsupportedModel`. ``pick``: the
    declared element of what forward() returns (float64), which the net must match; else one tensor.
    """
    import torch

    from fairspec.models.torch_chain import torch_chain

    ch = _Chain(None)
    final = "none"
    leaves = torch_chain(module, output)       # the structural fact: forward() is exactly this chain
    for pos, (name, m) in enumerate(leaves):
        t = _torch_type(m) if not isinstance(m, tuple) else {"relu": "ReLU", "sigmoid": "Sigmoid",
                                                              "softmax": "Softmax"}[m[0]]
        is_last = pos == len(leaves) - 1
        if final != "none":
            raise UnsupportedModel(t, name, f"{t} after the final {final} is not supported")
        if t in _TORCH_SKIP:
            continue
        if t == "Linear":
            W = m.weight.detach().cpu().double().numpy()
            b = m.bias.detach().cpu().double().numpy() if getattr(m, "bias", None) is not None else np.zeros(W.shape[0])
            if ch.width is not None and W.shape[1] != ch.width:
                raise UnsupportedModel(t, name, f"Linear of input width {W.shape[1]} after width {ch.width} "
                                                f"(the layers forward() calls do not chain)")
            ch.affine(W, b, "matmul")
            continue
        if t == "ReLU":
            ch.relu()
            continue
        if t == "Sigmoid" and is_last:
            final = "sigmoid"
            continue
        if t in ("Softmax",) and is_last:
            dim = m[1] if isinstance(m, tuple) else getattr(m, "dim", None)
            if dim not in (None, 1, -1):
                raise UnsupportedModel(t, name, f"Softmax over dim {dim} is not over the classes")
            final = "softmax"
            continue
        if t in ("Sigmoid", "Softmax"):
            raise UnsupportedModel(t, name, f"{t} is only supported as the final module")
        raise UnsupportedModel(t, name, f"module {t} is not piecewise-linear or not supported "
                                        f"(supported: Linear, ReLU, Identity, Dropout, Flatten, and a final "
                                        f"Sigmoid or Softmax)")
    layers = ch.finish()
    source = f"torch {type(module).__name__}"
    if verify:
        full = PLNet(tuple(layers), 0, final if final != "softmax" or layers[-1].n_out > 1 else "none", source)
        rng = np.random.default_rng(0)
        X = rng.normal(size=(64, full.n_inputs)) * 3.0
        was_training = module.training
        module.eval()
        try:
            from fairspec.models.torch_rerun import runtime_mode

            with runtime_mode():
                out = module(torch.as_tensor(X, dtype=_torch_dtype(module)))
        except Exception as exc:  # noqa: BLE001 - a layer that does not keep rows apart (Flatten(0, -1)): one sentence
            from fairspec.models.torch_chain import batch_merging_flatten

            if (found := batch_merging_flatten(module)) is not None:      # the layer, by name
                raise UnsupportedModel("Flatten", found[0], f"Flatten(start_dim={found[1]}, end_dim={found[2]}) "
                                       "merges the batch dimension into the features: its outputs are not one "
                                       "per row") from None
            first = str(exc).strip().splitlines()[-1][:160] if str(exc).strip() else type(exc).__name__
            raise UnsupportedModel(type(module).__name__, "forward", f"forward() fails on a batch of {len(X)} rows "
                                   f"of {full.n_inputs} features ({first}), which the network read from its "
                                   f"layers computes row by row") from None
        finally:
            if was_training:
                module.train()
        if pick is None and not isinstance(out, torch.Tensor):
            raise UnsupportedModel(type(module).__name__, "forward", "forward() returns several outputs, not one tensor")
        out = np.asarray(pick(out) if pick else out.detach().cpu().double().numpy(), dtype=np.float64)
        if out.ndim == 1:
            out = out[:, None]
        if not _checked_in_float16(module, ch.own, X, final, out):
            Z = full.forward_all(X)
            if final == "sigmoid":
                Z = sigmoid(Z)
            elif final == "softmax":
                Z = np.exp(Z - Z.max(axis=1, keepdims=True))
                Z = Z / Z.sum(axis=1, keepdims=True)
            if Z.shape != out.shape or not np.allclose(Z, out, rtol=1e-4, atol=1e-4):
                raise UnsupportedModel(type(module).__name__, "forward", "the module's forward() does not apply "
                                       "its children in order (converted network disagrees with the module)")
    if isinstance(readout, str) and readout == "chain":   # one layer per rounding of the runtime
        return ch.runtime_chain(final, source, type(module).__name__)
    if isinstance(readout, str) and readout in ("raw", "folded"):   # every column (raw: the runtime's own)
        if ch.foreign and readout == "raw":
            raise UnsupportedModel(type(module).__name__, "layers", ch.foreign)
        return PLNet(tuple(layers), 0, final, source)
    if readout is not None:
        return apply_readout(PLNet(tuple(layers), 0, final, source), readout)
    return _make_net(layers, index, final, source, "output")


def _torch_type(m) -> str:
    name = getattr(m, "original_name", None)     # scripted modules keep their Python class name
    return name or type(m).__name__


def _checked_in_float16(module, own, X, final, out) -> bool:
    """The module's agreement check within certify's runtime error bound at its precision, at each point
    (float16: its rounding is of the order of any fixed tolerance; float32 / float64: a fixed relative
    tolerance let a forward() that moves a large logit by less than it through): True when it passes;
    False for a module of mixed or other types (the fixed tolerance then), or outside the error model
    where it is not float16 (an overflow: the fixed tolerance, as before)."""
    import torch

    from fairspec.certify.agreement import runtime_disagreement

    kinds = {p.dtype for p in module.parameters() if p.is_floating_point()}
    precision = {torch.float16: "float16", torch.float32: "float32", torch.float64: "float64"}.get(
        next(iter(kinds)) if len(kinds) == 1 else None)
    if precision is None:
        return False
    why = runtime_disagreement(own, X, final, out, precision)
    if why.startswith(f"the {precision} error model does not hold"):
        if precision != "float16":
            return False
        raise UnsupportedModel(type(module).__name__, "parameters", why)
    if why:
        raise UnsupportedModel(type(module).__name__, "forward", "the module's forward() does not apply its "
                               f"children in order ({why})")
    return True


def _torch_dtype(module):
    import torch

    for p in module.parameters():
        return p.dtype
    return torch.float32
