"""The structural fact under a proof about a torch module: its forward() is exactly a chain of layers.

The agreement check of :mod:`fairspec.models.network_torch` runs the module on 64 random inputs, which
cannot see a forward() that departs from its children at one point; a proof rests on the module's code:

* an eager ``nn.Sequential`` (torch's own forward) chains its children; any other eager module (a
  trusted pickle, or one handed to the API) is traced with ``torch.fx`` and a scripted one (a
  TorchScript archive) read from its ``graph``: the declared output must be the input passed through
  calls of children's ``forward`` and the functional relu / sigmoid / softmax, each on the previous
  value; whatever else forward() computes must be free of effects (no other call of a child, no
  in-place op, no branch or loop); a traced forward() is then run for real beside its trace
  (:mod:`fairspec.models.torch_rerun`: forward()'s Python may branch on being traced);
* the torch the layers run is torch's own: a trusted pickle's code may patch it at load
  (``torch.nn.Linear.forward`` on the class, ``F.linear`` ...): :mod:`fairspec.models.torch_own`; and
  an eager module's instances hold no method of their own (forward, ``_call_impl``, a compiled call), no
  tensor of a subclass (its ``__torch_function__`` runs in F.linear) and plain settings;
* a TorchScript archive stores the code of every class, torch.nn.Linear's included, and it can be
  edited: each leaf layer's forward (inlined) must be the graph of the same layer scripted (or traced)
  afresh by the running torch, normalised (value names, name mangling, source comments, constants); a
  traced leaf keeps none of its settings, so each its graph's constants could stand for is tried and
  the one it matches is what is read (a traced Softmax's dim), and a traced Identity (called with no
  input, off the chain) must be torch's own too.

:func:`torch_chain` returns the chain (``(name, module)`` for a layer, ``(name, ("relu",))`` etc. for a
functional activation) or raises :class:`NotAChain` with one sentence. torch is imported inside.
"""

from __future__ import annotations

import functools
import inspect
import re
import warnings
from types import FunctionType
from typing import Any

from fairspec.models.network import UnsupportedModel

__all__ = ["NotAChain", "torch_chain"]

_CHECKED_LEAVES = {"Linear", "ReLU", "Identity", "Dropout", "AlphaDropout", "Flatten", "Sigmoid", "Softmax"}
_PURE_PRIM = {"prim::Constant", "prim::GetAttr", "prim::ListConstruct", "prim::TupleConstruct",
              "prim::DictConstruct"}


class NotAChain(UnsupportedModel):
    """A module whose forward() is not a plain chain of the layers read (or a layer's stored code is
    not torch's own): ``what`` is the sentence after the subject, which ``file`` names when known."""

    def __init__(self, op_type: str, node_name: str, what: str, file=None):
        self.what = what
        super().__init__(op_type, node_name, f"{'torch model ' + str(file) if file else 'the module'}: {what}")


def _refuse(module, what: str):
    name = getattr(module, "original_name", None) or type(module).__name__
    raise NotAChain(name, "forward", f"its forward() is not a plain chain of its layers ({what})")


def torch_chain(module, output: Any = None) -> list[tuple[str, Any]]:
    """The layers the declared output of ``module`` passes through, in order (see the module doc)."""
    _torch_own(module)
    try:
        chain = _chain(module, output)
    except NotAChain:
        _torch_own(module)      # forward()'s Python patched torch as fx traced or torch_rerun ran it: say that
        raise
    _torch_own(module)          # tracing and running forward() ran its Python, which may patch torch too
    return chain


def _torch_own(module) -> None:
    from fairspec.models.torch_own import changed, no_reference

    why = changed()          # a trusted pickle's code may have patched torch itself (torch_own)
    if why:
        what = ("whether the layers read run torch's own code is unknown" if no_reference()
                else "the layers read would run other code than torch's")
        raise NotAChain(getattr(module, "original_name", None) or type(module).__name__, "forward",
                        f"{what}: {why}")


def _chain(module, output: Any) -> list[tuple[str, Any]]:
    import torch

    if isinstance(module, torch.jit.ScriptModule):
        return _script_chain(module, "", output)
    for m in module.modules():
        if m._forward_hooks or m._forward_pre_hooks or getattr(m, "_forward_hooks_with_kwargs", None):
            _refuse(module, "a forward hook is registered on it or on a layer")
        if type(m).__call__ is not torch.nn.Module.__call__:
            _refuse(module, f"{type(m).__name__} overrides __call__")
        if getattr(m, "_compiled_call_impl", None) is not None:
            _refuse(module, f"{type(m).__name__} is compiled (torch.compile): calling it runs the compiled code")
        own = [n for n in vars(m) if isinstance(inspect.getattr_static(type(m), n, None),
                                                (FunctionType, staticmethod, classmethod, property))]
        if own:             # forward, _call_impl ... of the instance: what a call runs, not its class's
            _refuse(module, f"{type(m).__name__} has a {own[0]} of its own instance")
        _plain_state(module, m)
    hooks = getattr(torch.nn.modules.module, "_global_forward_hooks", {})
    if hooks or getattr(torch.nn.modules.module, "_global_forward_pre_hooks", {}):
        _refuse(module, "a global forward hook is registered in torch")
    dtype = next((p.dtype for p in module.parameters() if p.is_floating_point()), torch.float32)
    return _eager_chain(module, "", output, None, dtype)


# ------------------------------------------------------------------------------------------ eager

_PLAIN = (bool, int, float, type(None))


def _plain_state(module, m) -> None:
    """The tensors a layer computes with are torch's own types (a tensor subclass's ``__torch_function__``
    runs its code in every operation on it, F.linear's included) and the settings its forward reads plain
    values (a pickle restores whatever objects it holds)."""
    import torch

    tensors = list(m._parameters.items()) + list(m._buffers.items())
    tensors += [(n, getattr(m, n, None)) for n in ("weight", "bias")]
    for n, t in tensors:
        if t is not None and type(t) not in (torch.Tensor, torch.nn.Parameter):
            _refuse(module, f"the {n} of its {type(m).__name__} is a {type(t).__module__}.{type(t).__qualname__}, "
                            f"not a torch tensor: a tensor subclass runs its own code in the operations on it")
    if _eager_leaf(m):
        for n in ("inplace", "dim", "p", "start_dim", "end_dim", "training", "in_features", "out_features"):
            if n in vars(m) and type(vars(m)[n]) not in _PLAIN:
                _refuse(module, f"the {n} of its {type(m).__name__} is a {type(vars(m)[n]).__name__}, not a number")

def _eager_leaf(m) -> bool:
    return not list(m.children()) and type(m).__module__.startswith("torch.nn.")


def _eager_chain(m, prefix: str, output: Any, width: int | None, dtype) -> list[tuple[str, Any]]:
    """``width``: the width of m's input where the layers before it tell it (a custom module inside an
    nn.Sequential), for the real run of a traced forward(); ``dtype``: the module's."""
    import torch

    if type(m) is torch.nn.Sequential:
        if output not in (None, 0):
            _refuse(m, f"an nn.Sequential returns one tensor, so output {output!r} does not exist")
        out: list[tuple[str, Any]] = []
        for n, c in m.named_children():
            name = f"{prefix}.{n}" if prefix else n
            out += [(name, c)] if _eager_leaf(c) else _eager_chain(c, name, None, _width(out, width), dtype)
        return out
    if _eager_leaf(m):
        return [(prefix or type(m).__name__, m)]
    import operator

    import torch.fx
    import torch.nn.functional as F

    from fairspec.models.torch_rerun import runtime_mode

    try:
        with runtime_mode():    # forward()'s Python may branch on the grad mode: traced in the runtime's
            gm = torch.fx.symbolic_trace(m)
    except Exception as exc:  # noqa: BLE001 - control flow on values, unsupported Python: not a chain we read
        _refuse(m, f"torch.fx could not trace it ({str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__})")
    nodes = list(gm.graph.nodes)
    places = [n for n in nodes if n.op == "placeholder"]
    if len(places) != 1:
        _refuse(m, f"it takes {len(places)} inputs, not one")
    result = _pick(m, [n for n in nodes if n.op == "output"][0].args[0], output)
    acts = {torch.relu: "relu", F.relu: "relu", torch.sigmoid: "sigmoid", F.sigmoid: "sigmoid",
            torch.softmax: "softmax", F.softmax: "softmax"}
    steps: list[tuple[str, Any]] = []
    used = set()
    v = result
    while not (isinstance(v, torch.fx.Node) and v.op == "placeholder"):
        if not isinstance(v, torch.fx.Node):
            _refuse(m, f"the output is a {type(v).__name__}, not a value computed from the input")
        used.add(v)
        if v.op == "call_module" and len(v.args) == 1 and not v.kwargs:
            name = f"{prefix}.{v.target}" if prefix else str(v.target)
            sub = gm.get_submodule(v.target)
            steps += ([(name, sub)] if _eager_leaf(sub) else _eager_chain(sub, name, None, None, dtype))[::-1]
            v = v.args[0]
            continue
        act = acts.get(v.target) if v.op == "call_function" else (
            v.target if v.op == "call_method" and v.target in ("relu", "sigmoid", "softmax") else None)
        if act is None:
            _refuse(m, f"its output comes from {v.op} {getattr(v.target, '__name__', v.target)}")
        step = _fx_activation(m, act, v)
        steps.append((f"{prefix}.{v.name}" if prefix else v.name, step))
        v = v.args[0]
    pure = set(acts) | {operator.getitem}
    for n in nodes:
        if n in used or n.op in ("placeholder", "output", "get_attr"):
            continue
        if n.op == "call_module":
            _refuse(m, f"it also calls {n.target} off the chain of its output")
        if not ((n.op == "call_function" and n.target in pure and not n.kwargs.get("inplace"))
                or (n.op == "call_method" and n.target in ("relu", "sigmoid", "softmax", "size", "dim"))):
            _refuse(m, f"it also computes {n.op} {getattr(n.target, '__name__', n.target)}")
    _rerun(m, gm, steps[::-1], width, dtype)
    return steps[::-1]


def _width(chain, width: int | None) -> int | None:
    """The width after ``chain`` (its last Linear's, else ``width``): every other layer read keeps it."""
    import torch

    linears = [m for _, m in chain if isinstance(m, torch.nn.Linear)]
    return int(linears[-1].out_features) if linears else width


def _rerun(m, gm, chain, width: int | None, dtype) -> None:
    """forward() run for real must be what fx traced (its Python may branch on being traced): torch_rerun."""
    import torch

    from fairspec.models.torch_rerun import rerun_differs

    first = next((c for _, c in chain if isinstance(c, torch.nn.Linear)), None)
    width = int(first.in_features) if first is not None else width
    if width is None:
        _refuse(m, "no layer tells its input width, to run it against its torch.fx trace")
    why = rerun_differs(m, gm, width, dtype)
    if why:
        _refuse(m, why)


def _fx_activation(m, act: str, v) -> tuple:
    if act == "relu":
        if len(v.args) != 1 or v.kwargs.get("inplace"):
            _refuse(m, "a relu with other arguments than its input")
        return ("relu",)
    if act == "sigmoid":
        if len(v.args) != 1 or v.kwargs:
            _refuse(m, "a sigmoid with other arguments than its input")
        return ("sigmoid",)
    args = dict(zip(("dim", "_stacklevel", "dtype"), v.args[1:]), **v.kwargs)
    if set(args) - {"dim", "_stacklevel", "dtype"} or args.get("dtype") is not None or args.get("dim") not in (1, -1):
        _refuse(m, "a softmax that is not over dim 1 of a float tensor")
    return ("softmax", args["dim"])


def _pick(m, result, output):
    if isinstance(result, (tuple, list)):
        pos = 0 if output is None and len(result) == 1 else output
        if not isinstance(pos, int) or isinstance(pos, bool) or not -len(result) <= pos < len(result):
            _refuse(m, f"it returns {len(result)} outputs and output {output!r} is not one of them")
        return result[pos]
    if isinstance(result, dict):
        if output not in result:
            _refuse(m, f"it returns a dictionary without the key {output!r}")
        return result[output]
    if output not in (None, 0):
        _refuse(m, f"it returns a single tensor, so output {output!r} does not exist")
    return result


# ------------------------------------------------------------------------------------ TorchScript

def _has_graph(sub) -> bool:
    """A scripted module with a forward graph (a submodule without forward, as the ``parametrizations``
    holder of a traced weight_norm, raises RuntimeError on ``.graph``, not AttributeError)."""
    try:
        return hasattr(sub, "graph")
    except Exception:  # noqa: BLE001 - torch's RuntimeError: no graph
        return False


def _script_chain(m, prefix: str, output: Any) -> list[tuple[str, Any]]:
    if not list(m.named_children()):
        config = _check_leaf(m, prefix)
        if m.original_name == "Softmax" and config[0] is not None:    # a traced Softmax keeps no dim
            return [(prefix or m.original_name, ("softmax", config[0]))]
        return [(prefix or m.original_name, m)]
    try:
        g = m.graph
    except Exception:  # noqa: BLE001 - a module without a scripted forward
        _refuse(m, "it has no TorchScript forward graph")
    ins = list(g.inputs())
    if len(ins) != 2:
        _refuse(m, f"its forward takes {len(ins) - 1} inputs, not one")
    self_v, x_v = ins
    objs: dict[Any, tuple[str, Any]] = {self_v: ("", m)}
    prod: dict[Any, Any] = {}
    consts: dict[Any, Any] = {}
    for n in g.nodes():
        outs = list(n.outputs())
        if n.kind() == "prim::Constant" and len(outs) == 1:
            consts[outs[0]] = outs[0].toIValue()
        if n.kind() == "prim::GetAttr" and n.input() in objs:
            path, obj = objs[n.input()]
            sub = getattr(obj, n.s("name"), None)
            if _has_graph(sub) and hasattr(sub, "original_name"):
                objs[outs[0]] = (f"{path}.{n.s('name')}" if path else n.s("name"), sub)
        for o in outs:
            prod[o] = n
    ret = list(g.return_node().inputs())
    if len(ret) != 1:
        _refuse(m, "its forward returns several values")
    v = _script_pick(m, ret[0], prod, consts, output)
    steps: list[tuple[str, Any]] = []
    used = set()
    while v is not x_v:
        n = prod.get(v)
        if n is None:
            _refuse(m, "its output is not computed from its input")
        used.add(n)
        k, args = n.kind(), list(n.inputs())
        if k == "prim::CallMethod" and n.s("name") == "forward" and len(args) == 2 and args[0] in objs:
            path, sub = objs[args[0]]
            name = f"{prefix}.{path}" if prefix else path
            steps += _script_chain(sub, name, None)[::-1]
        elif k in ("aten::relu", "aten::sigmoid") and len(args) == 1:
            steps.append((f"{prefix}.{k[6:]}" if prefix else k[6:], (k[6:],)))
        elif k == "aten::softmax" and len(args) == 3 and consts.get(args[1], 0) in (1, -1) \
                and args[1] in consts and args[2] in consts and consts[args[2]] is None:
            steps.append((f"{prefix}.softmax" if prefix else "softmax", ("softmax", consts[args[1]])))
        else:
            _refuse(m, f"its output comes from {k}" + (f" {n.s('name')}" if k == "prim::CallMethod" else ""))
        v = args[1] if k == "prim::CallMethod" else args[0]
    for n in g.nodes():
        k = n.kind()
        if n in used or k in _PURE_PRIM:
            continue
        args = list(n.inputs())
        if k == "prim::CallMethod" and n.s("name") == "forward" and len(args) == 1 and args[0] in objs \
                and getattr(objs[args[0]][1], "original_name", None) == "Identity":
            # a traced Identity: called with no input (the next layer reads its input), torch's own code
            path, sub = objs[args[0]]
            _check_leaf(sub, f"{prefix}.{path}" if prefix else path)
            continue
        if not k.startswith("aten::") or "!" in str(n.schema()) or "no schema" in str(n.schema()):
            _refuse(m, f"it also runs {k} off the chain of its output")
    return steps[::-1]


def _script_pick(m, r, prod, consts, output):
    n = prod.get(r)
    kind = n.kind() if n is not None else ""
    if kind in ("prim::TupleConstruct", "prim::ListConstruct"):
        vals = list(n.inputs())
        pos = 0 if output is None and len(vals) == 1 else output
        if not isinstance(pos, int) or isinstance(pos, bool) or not -len(vals) <= pos < len(vals):
            _refuse(m, f"it returns {len(vals)} outputs and output {output!r} is not one of them")
        return vals[pos]
    if kind == "prim::DictConstruct":
        vals = list(n.inputs())
        for key, val in zip(vals[::2], vals[1::2]):
            if key in consts and consts[key] == output:
                return val
        _refuse(m, f"it returns a dictionary without the key {output!r}")
    if output not in (None, 0):
        _refuse(m, f"it returns a single tensor, so output {output!r} does not exist")
    return r


def _config(m) -> tuple | None:
    """The constructor arguments of the same layer in the running torch (None for a type whose code is
    not checked: from_torch refuses it)."""
    t = m.original_name
    if t not in _CHECKED_LEAVES:
        return None
    if t == "Linear":
        w = m.weight
        return (int(w.shape[1]), int(w.shape[0]), getattr(m, "bias", None) is not None)
    if t in ("Dropout", "AlphaDropout"):
        return (float(getattr(m, "p", 0.5)), bool(getattr(m, "inplace", False)))
    if t == "ReLU":
        return (bool(getattr(m, "inplace", False)),)
    if t == "Softmax":
        return (getattr(m, "dim", None),)
    if t == "Flatten":
        return (int(getattr(m, "start_dim", 1)), int(getattr(m, "end_dim", -1)))
    return ()


def _configs(m, config: tuple) -> list[tuple]:
    """The constructor arguments layer ``m`` may have been built with: its attributes' (``config``; a
    scripted layer keeps them) and, for a traced layer -- which keeps none, only constants in its graph
    -- each setting its graph's constants could be (each is then compared with torch's own layer of
    it: a match is torch's code for those arguments, which the caller reads)."""
    t = m.original_name
    consts = [n.output().toIValue() for n in m.inlined_graph.nodes() if n.kind() == "prim::Constant"
              and n.output().type().kind() in ("IntType", "FloatType")]
    ints = sorted({v for v in consts if type(v) is int})
    out = [config]
    if t == "ReLU" and not hasattr(m, "inplace"):
        out.append((True,))
    if t in ("Dropout", "AlphaDropout") and not hasattr(m, "p"):
        out += [(float(v), inplace) for v in sorted(set(consts)) if 0.0 <= v <= 1.0 for inplace in (False, True)]
    if t == "Softmax" and not hasattr(m, "dim"):
        out += [(d,) for d in ints]
    if t == "Flatten" and not hasattr(m, "start_dim"):
        out += [(s, e) for s in ints for e in ints]
    return out


@functools.lru_cache(maxsize=256)
def _canonical(t: str, config: tuple) -> frozenset[str]:
    """The normal graphs of layer ``t(*config)`` scripted afresh and traced in eval mode, alone and as
    the second layer of an nn.Sequential (a traced Identity there takes no input: its output is its
    input, which the next layer reads)."""
    import torch

    width = config[0] if t == "Linear" else 3
    sample = torch.zeros(2, width)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # TracerWarnings: not the user's to read
        inner = torch.jit.trace(torch.nn.Sequential(torch.nn.Identity(), getattr(torch.nn, t)(*config)).eval(),
                                sample)
        return frozenset([_normal(torch.jit.script(getattr(torch.nn, t)(*config)).inlined_graph),
                          _normal(torch.jit.trace(getattr(torch.nn, t)(*config).eval(), sample).inlined_graph),
                          _normal(getattr(inner, "1").inlined_graph)])


def _canonical_or_none(t: str, config: tuple) -> frozenset[str]:
    """:func:`_canonical`, empty where torch refuses those arguments (a traced Flatten's constants
    paired the wrong way round: Flatten(-1, 0))."""
    try:
        return _canonical(t, config)
    except Exception:  # noqa: BLE001 - torch's own layer does not take them: no code to match
        return frozenset()


def _normal(graph) -> str:
    import torch

    graph = graph.copy()
    torch._C._jit_pass_erase_shape_information(graph)    # a traced layer's graph holds its sample's shapes
    text = re.sub(r"___torch_mangle_\d+\.", "", str(graph))
    text = re.sub(r"warn_id=\d+", "warn_id", text)      # a counter of the process, not of the code
    lines = [re.sub(r", scope: .*$", "", line.split(" # ")[0]).rstrip() for line in text.splitlines()]
    # A constant is pure: it is written at each use and its line dropped, so the order a saved archive
    # lists constants in (torch.jit.load reorders them) does not make torch's own code look edited.
    constants: dict[str, str] = {}
    kept = []
    for line in lines:
        mt = _CONSTANT.fullmatch(line)
        if mt:
            constants[mt.group(1)] = f"const({mt.group(2)}{mt.group(3) or ''})"
        else:
            kept.append(line)
    names: dict[str, str] = {}
    return re.sub(r"%[\w.]+", lambda mt: constants.get(mt.group(0)) or names.setdefault(mt.group(0), f"%v{len(names)}"),
                  "\n".join(kept))


_CONSTANT = re.compile(r"\s*(%[\w.]+) : (.+?) = prim::Constant(\[.*\])?\(\)")



def batch_merging_flatten(module) -> tuple[str, int, int] | None:
    """The first Flatten layer of ``module`` that merges the batch dimension of the [N, width] tensor
    fairspec feeds into the features (start_dim 0, end_dim 1 or -1, on two dimensions): its name in the
    module, start_dim and end_dim; None when there is none. A traced layer keeps no arguments: they are the
    ones its code is torch's own Flatten for (``_check_leaf``; a layer whose code is not is left to it)."""
    import torch

    for name, m in module.named_modules():
        if isinstance(m, torch.nn.Flatten):
            dims = (m.start_dim, m.end_dim)
        elif isinstance(m, torch.jit.ScriptModule) and getattr(m, "original_name", None) == "Flatten":
            try:
                dims = (m.start_dim, m.end_dim) if hasattr(m, "start_dim") else _check_leaf(m, name)
            except Exception:  # noqa: BLE001 - not torch's own Flatten: the chain's reader says so
                continue
        else:
            continue
        start, end = (int(d) for d in dims)
        if -2 <= start < 2 and -2 <= end < 2 and (start % 2, end % 2) == (0, 1):
            return name, start, end
    return None


def _check_leaf(m, name: str) -> tuple | None:
    """Raise unless ``m``'s stored code is torch's own forward of its type; the constructor arguments
    it is torch's code for (None for a type whose code is not checked: from_torch refuses it)."""
    try:
        config = _config(m)
        if config is None:
            return None                 # not a layer fairspec reads: from_torch refuses its type
        code = _normal(m.inlined_graph)
        same = next((c for c in _configs(m, config) if code in _canonical_or_none(m.original_name, c)), None)
    except Exception as exc:  # noqa: BLE001 - an attribute missing or of another type: not canonical
        same, why = None, f" ({type(exc).__name__})"
    else:
        why = ""
    if same is None:
        raise NotAChain(m.original_name, name or "forward",
                        f"its layer {name or m.original_name} ({m.original_name}) runs code stored in the "
                        f"TorchScript file that is not torch's own {m.original_name}.forward{why}")
    return same
