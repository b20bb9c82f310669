"""Is the torch code an eager layer runs still torch's own? A trusted pickle runs code when it is loaded,
and that code can patch torch itself -- ``torch.nn.Linear.forward = f`` on the class, ``F.linear``,
``torch.relu``, a method of ``torch.Tensor`` -- so that the layers :mod:`fairspec.models.torch_chain`
reads as Linear / ReLU / ... are computed by other code (an instance's own ``forward`` is refused there).

:func:`capture` records, once per process and before the first pickle's code can touch torch, what the
eager layers reach: :func:`watching`, around each trusted pickle's load (``base.loading_pickle``), records
it at once when torch is imported, else the moment the pickle's code imports it (a ``sys.meta_path`` finder,
there only during the load, runs the record right after torch's own module has run, before the import
returns to that code); the torch loader records it when it has imported torch itself. torch imported by
other code after a pickle was loaded (outside a load: a pickled object's method later) is no reference,
and :func:`changed` says so:

* every attribute, resolved through the class's MRO, of ``nn.Module``, ``nn.Sequential``, the layer types
  fairspec reads, ``torch.Tensor`` and ``nn.Parameter`` (an attribute added on a subclass -- a
  ``Linear.__call__`` or a ``weight`` property -- is a change too);
* the closure of the globals their Python code names (``F`` in linear.py, then ``F.linear``, ``torch.relu``,
  ``handle_torch_function`` ...), followed through torch's modules and functions, with each Python
  function's ``__code__`` / defaults (a function edited in place keeps its identity);

* ``torch.fx.symbolic_trace`` and ``torch.jit.script`` / ``trace`` (which torch_chain reads forward()
  and the fresh leaves of a TorchScript file with), followed the same way;
* the dispatcher's table of kernels of each aten operator those layers run (a kernel registered from
  Python, ``torch.library``, or a Python fallback shows there), and the settings of how torch rounds on
  the CPU (float32 matmul precision, oneDNN's, autocast, flush-to-zero);

and :func:`changed` names what is not the same now (plus a layer's forward / call path whose code does not
come from torch's package, in case the capture came after the patch: torch imported and patched by a
pickle that fairspec loaded before it imported torch), and a torch function / dispatch mode left active.
What is not covered: a patch in C, an operator outside the list below, torch attributes reached only
through an object (not a global or module attribute named in the code), and a pickle that patches numpy or
fairspec itself -- trusting a pickle trusts its code. torch is imported inside.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from types import FunctionType, ModuleType
from typing import Any

__all__ = ["capture", "changed", "no_reference", "watching"]

# what the layers fairspec reads run in the dispatcher, float16 / 32 / 64 on the CPU (torch's profiler on
# them, and fairspec's reading of their outputs), and the matrix products a Linear may run instead of addmm
OPS = ("linear", "addmm", "mm", "matmul", "t", "transpose", "relu", "clamp_min", "sigmoid", "softmax", "_softmax",
       "flatten", "view", "reshape", "dropout", "alpha_dropout", "expand", "as_strided", "copy_", "_to_copy", "to",
       "detach", "empty", "empty_strided", "lift_fresh", "resolve_conj", "resolve_neg", "zeros", "zero_", "add",
       "mul", "contiguous", "select", "slice", "index_select", "stack", "cat", "unsqueeze", "squeeze")
LAYERS = ("Linear", "ReLU", "Identity", "Dropout", "AlphaDropout", "Flatten", "Sigmoid", "Softmax")
_MISSING = object()
# set by Python when first asked for: copyreg's cache of a class's slots (when one is first pickled), a
# class's __annotations__ (an empty dict, when torch.jit.script reads them)
_CACHES = {"__slotnames__", "__annotations__"}
_state: dict[str, Any] = {}        # "entries": {label: (namespace dict, name, value)}, "files": [...]


def capture(path=None, *, imported_here: bool = False) -> None:
    """Record torch's code once (the first call that finds torch imported; ``path``: the pickle about to
    be loaded, named by :func:`changed`'s sentence; ``imported_here``: the caller has just imported torch
    itself, so no pickle's code ran since). Imports nothing.

    torch found imported after a pickle was loaded without it (fairspec did not import it): that
    pickle's code may have imported and patched it before this record, which is then no reference."""
    files = _state.setdefault("files", [])
    if "entries" not in _state and "torch" in sys.modules:
        if files and not imported_here:
            _state["late"] = list(files)
        _state["entries"] = _entries(sys.modules["torch"])
    if path is not None:
        files.append(str(path))


@contextmanager
def watching(path):
    """Around the load of the trusted pickle ``path``: torch's code recorded before that pickle's code can
    patch it -- now, when torch is imported, else when that code imports torch (a finder on
    ``sys.meta_path`` for the duration of the load). Imports nothing."""
    capture(path)
    if "entries" in _state or "torch" in sys.modules:
        yield
        return
    finder = _TorchImport()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        finder.remove()


class _TorchImport:
    """A ``sys.meta_path`` finder that has :func:`capture` run the moment ``torch``'s own module has run,
    whoever imports it: it finds torch's spec with the finders after it and wraps that spec's loader's
    ``exec_module`` (on that one loader object, so ``torch.__loader__`` stays torch's own). A loader it
    cannot wrap is left alone: the record then comes later and :func:`changed` says it is no reference."""

    def __init__(self):
        self.loader = None

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or self.loader is not None:
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if finder is not self and find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader, run = spec.loader, getattr(spec.loader, "exec_module", None)
        if run is None or not hasattr(loader, "__dict__"):
            return spec

        def exec_module(module):
            vars(loader).pop("exec_module", None)
            run(module)
            try:
                capture(imported_here=True)      # torch has just run: no code of the pickle's since
            except Exception:  # noqa: BLE001 - no record: a later one is no reference, and changed() says so
                _state.pop("entries", None)

        loader.exec_module = exec_module
        self.loader = loader
        return spec

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        if self.loader is not None:
            vars(self.loader).pop("exec_module", None)


def changed() -> str:
    """'' when the code the eager layers reach is what :func:`capture` found, else one sentence."""
    import torch

    if "entries" not in _state:
        capture()
    what = [ns.where(name) if isinstance(ns, _ClassView) else label
            for label, (ns, name, value) in _state["entries"].items() if not _same(ns.get(name, _MISSING), value)]
    what += [label for label, value in _now_functions(torch) if not _from_torch(value, torch)]
    what = list(dict.fromkeys(what))
    modes = [kind for kind, n in (("function", torch._C._len_torch_function_stack()),
                                  ("dispatch", torch._C._len_torch_dispatch_stack())) if n]
    if _state.get("late"):
        late = _named(_state["late"])
        return (f"torch was imported after {late} was loaded, by code fairspec did not watch (a method of a "
                f"pickled object, say), which may have patched torch before fairspec recorded its own code; "
                f"import torch before loading {late}, or check the torch model in a process that loads no pickle "
                f"before it (the command line, the torch model declared first), so that torch's code is recorded "
                f"first")
    if not what and not modes:
        return ""
    files = _state.get("files") or []
    after = f" after loading {_named(files)}" if files else ""
    if what:
        more = f" (and {len(what) - 1} more changes)" if len(what) > 1 else ""
        return f"{sorted(what, key=_order)[0]} is not torch's own{after}{more}"
    return f"a torch {' and '.join(modes)} mode is active{after}: torch's operators run other code"


def no_reference() -> bool:
    """torch was imported after a trusted pickle was loaded, out of :func:`watching`'s sight: whether its
    code is still torch's own cannot be told (:func:`changed` says so and what to do), not that it is not."""
    return bool(_state.get("late"))


def _named(files: list[str]) -> str:
    names = list(dict.fromkeys(reversed(files)))      # the latest first
    return ", ".join(names[:3]) + (f" and {len(names) - 3} other trusted pickles" if len(names) > 3 else "")


def _same(now, then) -> bool:
    return now is then or (type(now) is type(then) and isinstance(then, (str, tuple)) and now == then)


def _order(label: str):
    # the layer types' forward first: what the sentence names is what a reader looks for
    return (not label.endswith(".forward"), "Module" in label, label)


def _roots(torch) -> list[tuple[str, type]]:
    nn = torch.nn
    classes = [("torch.nn.Module", nn.Module), ("torch.nn.Sequential", nn.Sequential),
               ("torch.Tensor", torch.Tensor), ("torch.nn.Parameter", nn.Parameter)]
    return classes + [(f"torch.nn.{t}", getattr(nn, t)) for t in LAYERS]


def _entries(torch) -> dict[str, tuple[dict, str, Any]]:
    out: dict[str, tuple[dict, str, Any]] = {}
    todo: list[FunctionType] = []
    for label, cls in _roots(torch):
        for name in set(dir(cls)) - _CACHES:
            for klass in cls.__mro__:              # the attribute as lookup resolves it, static
                if name in vars(klass):
                    ns = _ClassView(cls, klass)
                    out[f"{label}.{name}"] = (ns, name, vars(klass)[name])
                    f = _function(vars(klass)[name])
                    if f is not None:
                        todo.append(f)
                    break
        out[f"{label} attributes"] = (_Names(cls), "names", _Names(cls).get("names"))
    for where, name in (("fx", "symbolic_trace"), ("jit", "script"), ("jit", "trace")):
        f = _function(getattr(getattr(torch, where, None), name, None))     # torch.fx: imported by torch 2.x
        if f is not None:
            todo.append(f)
    out["torch's arithmetic settings"] = (_Settings(torch), "settings", _Settings(torch).get("settings"))
    tables = _Tables(torch)
    for op in OPS:
        out[f"the dispatcher's kernels of aten::{op}"] = (tables, op, tables.get(op))
    seen: set[int] = set()
    while todo:
        f = todo.pop()
        if id(f) in seen or not _in_torch(f):
            continue
        seen.add(id(f))
        mod = f.__globals__.get("__name__", "?")
        for attr in ("__code__", "__defaults__", "__kwdefaults__"):
            out[f"{f.__module__}.{f.__qualname__}.{attr}"] = (_Attrs(f), attr, getattr(f, attr))
        names = _code_names(f.__code__)
        for name in names:
            if name not in f.__globals__:
                continue
            value = f.__globals__[name]
            out[f"{mod}.{name}"] = (f.__globals__, name, value)
            g = _function(value)
            if g is not None:
                todo.append(g)
            if isinstance(value, ModuleType) and value.__name__.startswith("torch"):
                lazy = type(value) is not ModuleType      # torch._VF: names it forwards, absent until set
                if lazy and "vf" in vars(value):
                    out[f"{value.__name__}.vf"] = (vars(value), "vf", vars(value)["vf"])
                for attr in names:                 # F.linear, torch.relu, _VF.dropout ...
                    if lazy and attr not in vars(value):
                        out[f"{value.__name__}.{attr}"] = (vars(value), attr, _MISSING)
                    if attr in vars(value):
                        out[f"{value.__name__}.{attr}"] = (vars(value), attr, vars(value)[attr])
                        g = _function(vars(value)[attr])
                        if g is not None:
                            todo.append(g)
    return out


def _now_functions(torch):
    """The Python functions the entries hold now (their code must come from torch's package)."""
    for label, (ns, name, _) in _state["entries"].items():
        f = _function(ns.get(name, None))
        if f is not None and (label.endswith(".forward") or label.endswith("call_impl")
                              or label.endswith(".__call__")):
            yield (ns.where(name) if isinstance(ns, _ClassView) else label), f


def _function(value) -> FunctionType | None:
    value = getattr(value, "__func__", value)      # classmethod / staticmethod / bound method
    return value if isinstance(value, FunctionType) else None


def _in_torch(f: FunctionType) -> bool:
    return str(getattr(f, "__module__", "") or "").startswith("torch")


def _from_torch(f: FunctionType, torch) -> bool:
    import os

    root = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    return _in_torch(f) and os.path.abspath(f.__code__.co_filename).startswith(root)


def _code_names(code) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names |= _code_names(c)
    return names


class _ClassView:
    """``get(name)``: the attribute of ``cls`` as lookup resolves it now, or _MISSING when it now comes
    from another class of its MRO than ``klass`` (a subclass shadowing it)."""

    def __init__(self, cls, klass):
        self.cls, self.klass = cls, klass

    def get(self, name, default=None):
        for k in self.cls.__mro__:
            if name in vars(k):
                return vars(k)[name] if k is self.klass else _MISSING
        return default

    def where(self, name) -> str:
        """The attribute named by the class it now comes from (a patch of nn.Module's, not every layer's)."""
        k = next((k for k in self.cls.__mro__ if name in vars(k)), self.klass)
        mod = k.__module__
        pre = "torch.nn" if mod.startswith("torch.nn.modules") else "torch" if k.__name__ == "Tensor" else mod
        return f"{pre}.{k.__qualname__}.{name}"


class _Attrs:
    def __init__(self, f):
        self.f = f

    def get(self, name, default=None):
        return getattr(self.f, name, default)


class _Names:
    """``get('names')``: the attribute names of a class and its MRO (one added is a change too)."""

    def __init__(self, cls):
        self.cls = cls

    def get(self, name, default=None):
        return tuple(sorted({n for k in self.cls.__mro__ for n in vars(k)} - _CACHES))


class _Tables:
    """``get(op)``: the dispatcher's table of kernels of ``aten::op`` (its text: where each was registered)."""

    def __init__(self, torch):
        self.torch = torch

    def get(self, op, default=None):
        try:
            return self.torch._C._dispatch_dump_table(f"aten::{op}")
        except Exception:  # noqa: BLE001 - no such operator in this torch
            return default


class _Settings:
    """``get('settings')``: what decides how torch rounds on the CPU -- float32 matmul precision (reduced
    ones may compute in bfloat16), the oneDNN switches, float16 reductions, autocast on the CPU, and
    flush-to-zero of subnormals (no getter: a probe)."""

    def __init__(self, torch):
        self.torch = torch

    def get(self, name, default=None):
        torch = self.torch
        values: list = [torch.get_float32_matmul_precision(), torch.backends.mkldnn.enabled]
        for what in ("_get_cpu_allow_fp16_reduced_precision_reduction",):
            values.append(getattr(torch._C, what, lambda: None)())
        effective = "ieee"          # oneDNN's float32 matmul precision: "none" inherits its parent's
        for obj in (torch.backends, torch.backends.mkldnn, getattr(torch.backends.mkldnn, "matmul", None)):
            own = str(getattr(obj, "fp32_precision", "none"))
            effective = effective if own == "none" else own
        values.append(effective)
        try:        # autocast on the CPU: Linear computes in bfloat16 (fairspec's runs turn it off: runtime_mode)
            values += [torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")]
        except Exception:  # noqa: BLE001 - an older torch: its own getters
            values += [getattr(torch, "is_autocast_cpu_enabled", lambda: None)()]
        tiny = torch.tensor([2.0 ** -126], dtype=torch.float32)
        values.append(float((tiny / 4.0)[0]) != 0.0)
        return tuple(values)
