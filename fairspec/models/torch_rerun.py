"""A real run of an eager module's forward() against its torch.fx trace.

:mod:`fairspec.models.torch_chain` reads a non-Sequential eager module's forward() from its
``torch.fx`` trace, which runs forward()'s Python once with a Proxy for the input: Python that branches
on being traced (``isinstance(x, torch.fx.Proxy)``, ``is_fx_tracing()``) or computes what the trace
does not see shows fx one program and runs another. :func:`rerun_differs` runs forward() itself and the
traced GraphModule on the same real inputs under one recorder, a ``TorchFunctionMode`` -- every call
Python makes into torch: torch functions, ``torch.ops`` operators, Tensor methods and properties
(``.item()``, a comparison, ``x.tolist()``, ``x.numpy()``, ``x.data_ptr()``, ``x.shape``) --, and
compares the two sequences of calls (each with the module's tensors it reads) and the outputs bit for
bit (what C++ runs beneath a call is fixed by the call, its arguments -- the module's tensors by
identity, the rest the outputs tell: other weights, equal but past a hidden unit no probe input wakes,
compute the same outputs on every one -- and torch's state, :mod:`fairspec.models.torch_own`;
a ``TorchDispatchMode`` would see each aten operator too, but its first use imports torch._dynamo,
about 1.3 s a process, where this costs a millisecond or two on a small MLP); forward() must
also leave the modules' state as it found it (an attribute rebound -- a call counter -- or a parameter /
buffer written in place). A forward() whose Python reads the input's values to branch runs the
comparison / ``item`` the trace lacks on every input, so it is caught whichever branch a point takes.

What it does not catch: a forward() that detects the recorder (a mode is active) or branches on state
outside the modules (a global, the clock): trusting a pickle trusts its code; this catches accidents and
patches, not an adversary. The inputs are fixed points of the input width (not the spec's box, which the
reader does not know): the sequences, not the points, are what a branch on the data shows in.
torch is imported inside.

:func:`runtime_mode` is the one state of torch's thread-local switches every run of a module by fairspec
is made in -- the fx trace, this real run, the agreement check, the runtime itself (witnesses replayed,
points enumerated, in this process or a worker): no gradient, no inference mode, no autocast. A forward()
that branches on ``torch.is_grad_enabled()`` or ``torch.is_inference_mode_enabled()`` is read and run in
the branch the runtime takes (ambient state -- a caller's ``torch.inference_mode()``, a worker's fresh
thread -- changes nothing).
"""

from __future__ import annotations

from typing import Any

__all__ = ["rerun_differs", "probe_inputs", "runtime_mode"]


def runtime_mode():
    """A context: torch's thread-local state as fairspec runs a module (see the module doc)."""
    import contextlib

    import torch

    stack = contextlib.ExitStack()
    stack.enter_context(torch.inference_mode(False))
    stack.enter_context(torch.no_grad())
    stack.enter_context(torch.autocast("cpu", enabled=False))
    return stack


def probe_inputs(width: int, dtype) -> list:
    """The inputs both are run on: one batch of fixed points -- 0, the corners (1, ..., 1), (-1, ..., -1)
    and the two alternating 0 / 1 ones, integer grid points 0..7 (a coordinate-wise pattern and each
    constant), seeded normal points -- and one of its rows alone (a forward() may branch on the batch size)."""
    import torch

    g = torch.Generator().manual_seed(0)
    rows = [torch.zeros(width), torch.ones(width), -torch.ones(width),
            torch.tensor([float(i % 2) for i in range(width)]), torch.tensor([float((i + 1) % 2) for i in range(width)])]
    rows += [torch.tensor([float((i * 3 + k) % 8) for i in range(width)]) for k in range(4)]
    rows += [torch.full((width,), float(k)) for k in range(2, 8)]
    rows += [torch.randn(width, generator=g) * 3.0 for _ in range(8)]
    batch = torch.stack(rows).to(dtype)
    return [batch, batch[7:8].clone()]


def rerun_differs(module, traced, width: int, dtype) -> str:
    """'' when ``module``'s forward() and its fx trace ``traced`` run the same operations (on the same
    tensors of the module) to the same outputs (bit for bit) on :func:`probe_inputs` and forward() leaves
    the modules' state unchanged; else what differs, a phrase."""
    import torch

    owned = {id(t): name for name, t in (*module.named_parameters(), *module.named_buffers())}
    for prefix, sub in module.named_modules():      # a tensor held as a plain attribute (the trace keeps it too)
        for k, v in vars(sub).items():
            if isinstance(v, torch.Tensor):
                owned.setdefault(id(v), f"{prefix}.{k}" if prefix else k)
    for x in probe_inputs(width, dtype):
        before = _state(module)
        try:
            real_ops, real_out = _recorded(module, x, owned)
        except Exception as exc:  # noqa: BLE001 - forward() failing on an input fx traced: not the traced program
            return f"run on {tuple(x.shape)} inputs it raises {type(exc).__name__}, which its torch.fx trace does not"
        if _state(module) != before:
            return "running it changes the state of its modules (an attribute or a parameter), which its torch.fx " \
                   "trace does not"
        try:
            fx_ops, fx_out = _recorded(traced, x, owned)
        except Exception as exc:  # noqa: BLE001
            return f"its torch.fx trace raises {type(exc).__name__} on {tuple(x.shape)} inputs"
        for pos, (a, b) in enumerate(zip(real_ops, fx_ops)):
            if a[0] is not b[0] or a[2] != b[2]:
                return (f"run on real inputs it computes {_on(a)} where its torch.fx trace computes {_on(b)} "
                        f"(operation {pos + 1})")
        if len(real_ops) != len(fx_ops):
            longer, what = (real_ops, "also computes") if len(real_ops) > len(fx_ops) else (fx_ops, "omits")
            return f"run on real inputs it {what} {longer[min(len(real_ops), len(fx_ops))][1]} " \
                   f"(operation {min(len(real_ops), len(fx_ops)) + 1}), which its torch.fx trace " \
                   f"{'does not' if what == 'also computes' else 'computes'}"
        if not _same(real_out, fx_out, torch):
            return "run on real inputs its outputs differ from its torch.fx trace's (bit for bit)"
    return ""


def _recorded(fn, x, owned: dict[int, str]) -> tuple[list[tuple[Any, str, tuple[str, ...]]], Any]:
    """The calls ``fn(x)`` makes into torch -- each with the module's tensors (parameters, buffers, plain
    attributes) among its arguments (``owned``: their names by identity; the trace holds the same
    tensors), since the same
    operations on other weights may compute the same outputs at every probe input (the other weights
    differing only past a hidden unit those inputs leave at 0) -- and its output."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_flatten

    log: list[tuple[Any, str, tuple[str, ...]]] = []

    class _Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            leaves = tree_flatten((args, kwargs))[0]
            log.append((func, _name(func), tuple(owned[id(t)] for t in leaves
                                                 if isinstance(t, torch.Tensor) and id(t) in owned)))
            return func(*args, **kwargs)

    # the same random stream for both (a module in training mode: dropout), the caller's left as it was
    with torch.random.fork_rng(devices=[]), runtime_mode(), _Functions():
        torch.manual_seed(0)
        out = fn(x)
    return log, out


def _on(call) -> str:
    return f"{call[1]} on {', '.join(call[2])}" if call[2] else call[1]


def _name(func) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    mod = getattr(func, "__module__", None) or ""
    name = name.replace("_VariableFunctionsClass.", "torch.").replace("TensorBase.", "Tensor.")
    if mod.startswith("torch.nn.functional"):
        name = f"F.{name}"
    return name


def _state(module) -> list:
    out = []
    for name, m in module.named_modules():
        attrs = sorted((k, id(v)) for k, v in vars(m).items())
        # an inference tensor (made under torch.inference_mode) has no version counter, and cannot be
        # written in place outside inference mode: the runs are made outside it (runtime_mode)
        tensors = [(k, id(t), None if t.is_inference() else t._version)
                   for d in (m._parameters, m._buffers) for k, t in d.items() if t is not None]
        out.append((name, attrs, tensors, sorted((k, id(c)) for k, c in m._modules.items())))
    return out


def _same(a, b, torch) -> bool:
    from torch.utils._pytree import tree_flatten

    la, sa = tree_flatten(a)
    lb, sb = tree_flatten(b)
    if sa != sb or len(la) != len(lb):
        return False
    for u, v in zip(la, lb):
        if isinstance(u, torch.Tensor) != isinstance(v, torch.Tensor):
            return False
        if not isinstance(u, torch.Tensor):
            if type(u) is not type(v) or u != v:
                return False
            continue
        if u.dtype != v.dtype or u.shape != v.shape or u.layout != v.layout:
            return False
        if u.is_floating_point():
            bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}.get(u.element_size())
            if bits is None or not torch.equal(u.contiguous().view(bits), v.contiguous().view(bits)):
                return False
        elif not torch.equal(u, v):
            return False
    return True
