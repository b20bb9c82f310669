"""The torch family of the cheap model-file look-ups (fairspec.models.peek): the archive's data.pkl
(TorchScript archives and zip-format torch.save files) is read by the inert unpickler
(fairspec.models.inert_pickle) and the first Linear layer's in_features is taken, without importing torch.
A TorchScript archive also stores the root module's class as code (code/__torch__/....py, Python syntax):
its forward()'s signature is read from there with the standard library's parser (nothing is run), so lint
refuses a forward() taking several tensors -- or one NamedTuple of them, whose class the archive stores too --
as check's loader does (FS428, input_problem)."""

from __future__ import annotations

import ast
import os
import pathlib
import re
import zipfile

from .base import ModelLoadError, require_file
from .inert_pickle import _MAX_PICKLE_BYTES, _FakeTensor, _InertUnpickler, _state, _Stub


def torch_file_kind(path: pathlib.Path) -> str:
    """'script' for a TorchScript archive, 'pickle' for torch.save output (zip or legacy), else raise
    ModelLoadError. Read without torch: check's loader and lint (FS408) decide alike."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise ModelLoadError(f"model file {path} could not be read ({exc.strerror or exc})", path) from exc
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
        except zipfile.BadZipFile as exc:
            raise ModelLoadError(f"{path} is not a torch model file (it looks like a zip archive but is damaged)", path) from exc
        if any(n.endswith("/constants.pkl") or "/code/" in n or n.startswith("code/") for n in names):
            return "script"
        if any(n.endswith("data.pkl") for n in names):
            return "pickle"
        raise ModelLoadError(
            f"{path} is not a torch model file (a zip archive without TorchScript code or torch.save data)", path
        )
    if head[:1] == b"\x80":                              # a pickle stream (legacy torch.save)
        return "pickle"
    raise ModelLoadError(
        f"{path} is not a torch model file (neither a TorchScript archive nor a torch.save file)", path
    )


def untrusted_pickle(path) -> str:
    """Why a torch.save file is not loaded without `trust pickle` (check's loader, lint's FS408)."""
    return (f"{path} is a pickle (as torch.save writes), and loading a pickle runs code from the file; "
            f"export it with torch.jit.save or to ONNX, or write `trust pickle` in the spec if you trust it")


def _linear_width(obj) -> int | None:
    module, name = obj._qual
    if name != "Linear" or not module.split(".___torch_mangle")[0].endswith("torch.nn.modules.linear"):
        return None
    st = _state(obj)
    w = st.get("in_features")
    if isinstance(w, int) and not isinstance(w, bool) and w > 0:
        return w
    weight = st.get("weight")
    if weight is None and isinstance(st.get("_parameters"), dict):
        weight = st["_parameters"].get("weight")
    if isinstance(weight, _FakeTensor) and len(weight.shape) == 2:
        return int(weight.shape[1])
    return None


def _torch_width_from(root) -> int | None:
    first_weight = first_2d = None
    seen = set()
    stack = [(root, None)]
    while stack:                                         # depth-first, in the pickle's order
        obj, key = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, _Stub):
            w = _linear_width(obj)
            if w is not None:
                # a 2-D tensor met first (a subclass of Linear's weight, a parametrized one's) may be
                # the first layer's: the width is then not known here (the loader asks the module)
                return w if first_2d in (None, w) else None
        if first_2d is None and isinstance(obj, _FakeTensor) and len(obj.shape) == 2:
            first_2d = int(obj.shape[1])     # any 2-D tensor (a parametrized weight's factors too)
        if (first_weight is None and key == "weight" and isinstance(obj, _FakeTensor)
                and len(obj.shape) == 2):
            first_weight = int(obj.shape[1])
        if isinstance(obj, (_Stub, dict, list, tuple)):
            items = []
            if isinstance(obj, dict) and not isinstance(obj, _Stub):
                items = list(obj.items())
            elif isinstance(obj, _Stub):
                items = list(_state(obj).items()) + [(None, c) for c in dict.values(obj)]
                items += [(None, a) for a in obj._stub_args]
            else:
                items = [(None, c) for c in obj]
            for k, child in reversed(items):
                if isinstance(child, (_Stub, dict, list, tuple, _FakeTensor)):
                    stack.append((child, k))
    return first_weight


_CONTAINER = re.compile(r"(?:typing\.)?(?:Tuple|List|Dict)\[")


def input_problem(path, needed) -> str | None:
    """The sentence for a torch module whose forward() needs several tensors (FS428, whose hint says how
    to save it), else None. ``needed``: (name, TorchScript type or None, NamedTuple) of each argument
    forward() needs, the last None unless the argument is a NamedTuple: then (its class's name, its field
    names, () when unknown). One argument that is a tuple, list or dict of tensors, or a NamedTuple, is
    several too. Lint (read from the archive's code) and check's loader (torch_model, from the loaded
    module) say the same."""
    if len(needed) > 1:
        names = ", ".join(n for n, *_ in needed[:4]) + (", ..." if len(needed) > 4 else "")
        what, which, build = f"{len(needed)} inputs ({names})", "input", ""
    elif len(needed) == 1 and needed[0][2] is not None:
        name, _, (cls, fields) = needed[0]
        listed = ", ".join(fields[:6]) + (", ..." if len(fields) > 6 else "")
        what = f"a NamedTuple {cls} ({name}: {listed})" if fields else f"a NamedTuple {cls} ({name})"
        which, build = "field", f" and builds the {cls} from it"
    elif len(needed) == 1 and needed[0][1] and _CONTAINER.match(needed[0][1]):
        what, which, build = f"a {needed[0][1][:60]} ({needed[0][0]})", "input", ""
    else:
        return None
    return (f"torch model {path} has a forward() that takes {what}, but fairspec feeds a model one tensor, "
            f"the encoded features (which columns would go to which {which} is in neither the file nor the "
            f"spec); save a module whose forward() takes that one tensor{build}")


_MAX_CODE_BYTES = 8 << 20


def _forward_inputs(zf: zipfile.ZipFile, prefix: str, root) -> tuple[tuple, ...] | None:
    """The arguments the root module's forward() needs (positional, no default, after self: name, type
    annotation and, for a NamedTuple, its class's name and fields: input_problem), read from the
    TorchScript code the archive stores for its class (data.pkl names it:
    __torch__.pkg.Cls is class Cls of code/__torch__/pkg.py); None when the archive does not say (a
    torch.save pickle: its class's code is not in the file)."""
    if not isinstance(root, _Stub):
        return None
    module, name = root._qual
    if module != "__torch__" and not module.startswith("__torch__."):
        return None
    cls = _stored_class(zf, prefix, module, name)
    fwd = cls and next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if fwd is None or fwd.args.vararg is not None:
        return None
    positional = [*fwd.args.posonlyargs, *fwd.args.args]
    required = positional[:len(positional) - len(fwd.args.defaults)]
    out = []
    for a in required[1:]:                                                            # [0] is self
        kind = a.annotation and ast.unparse(a.annotation)
        out.append((a.arg, kind, _named_tuple(zf, prefix, kind)))
    return tuple(out)


_QUALIFIED = re.compile(r"__torch__(?:\.\w+)+")


def _stored_class(zf: zipfile.ZipFile, prefix: str, module: str, name: str) -> ast.ClassDef | None:
    """Class ``name`` of the TorchScript code the archive stores for ``module`` (``__torch__.pkg``:
    code/__torch__/pkg.py), parsed with ast (never run); None when the archive holds no such file or
    class, or the file is over _MAX_CODE_BYTES."""
    try:
        info = zf.getinfo(prefix + "code/" + module.replace(".", "/") + ".py")
    except KeyError:
        return None
    if info.file_size > _MAX_CODE_BYTES:
        return None
    with zf.open(info) as fh:
        tree = ast.parse(fh.read().decode("utf-8"))
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _named_tuple(zf: zipfile.ZipFile, prefix: str, kind: str | None) -> tuple[str, tuple[str, ...]] | None:
    """(class name, field names) when ``kind`` (a TorchScript type, as the archive's code writes it) is a
    NamedTuple whose class the archive stores (``__torch__.pkg.Pair``: class Pair(NamedTuple) of
    code/__torch__/pkg.py, its fields the annotated names of its body), else None."""
    if not kind or not _QUALIFIED.fullmatch(kind):
        return None
    module, _, name = kind.rpartition(".")
    cls = _stored_class(zf, prefix, module, name)
    if cls is None or not any((b.id if isinstance(b, ast.Name) else getattr(b, "attr", None)) == "NamedTuple"
                              for b in cls.bases):
        return None
    return name, tuple(n.target.id for n in cls.body
                       if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))


def named_tuple_fields(path, kind: str) -> tuple[str, ...]:
    """The field names of the NamedTuple ``kind`` (a TorchScript type: ``__torch__.Pair``) the TorchScript
    archive ``path`` stores the code of, () when it does not say (check's loader, whose TorchScript
    schema names the type but not its fields)."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") <= 1]
            found = names and _named_tuple(zf, names[0][:-len("data.pkl")], kind)
    except Exception:  # noqa: BLE001 - unreadable code: the sentence then names no field
        return ()
    return found[1] if found else ()


def _archive_facts(p: pathlib.Path) -> tuple[int | None, tuple[tuple, ...] | None]:
    """(the first Linear layer's in_features, the inputs forward() needs) of a torch file, each None
    when the file does not say; ModelLoadError when it is missing or not a torch file."""
    require_file(p)
    try:
        with open(p, "rb") as fh:
            head = fh.read(4)
        if head[:1] == b"\x80":
            return None, None                            # legacy torch.save: several pickles in a row
        if not head.startswith(b"PK"):
            raise ModelLoadError(
                f"{p} is not a torch model file (neither a TorchScript archive nor a torch.save file)", p
            )
        with zipfile.ZipFile(p) as zf:
            names = [n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") <= 1]
            if not names:
                raise ModelLoadError(
                    f"{p} is not a torch model file (a zip archive without torch data)", p
                )
            info = zf.getinfo(names[0])
            if info.file_size > _MAX_PICKLE_BYTES:
                return None, None
            with zf.open(info) as fh:
                root = _InertUnpickler(fh).load()
            try:
                inputs = _forward_inputs(zf, names[0][:-len("data.pkl")], root)
            except Exception:  # noqa: BLE001 - code the parser does not read (RecursionError too): no answer
                inputs = None
    except zipfile.BadZipFile as exc:
        raise ModelLoadError(f"{p} is not a torch model file (it looks like a zip archive but is damaged)", p) from exc
    except OSError as exc:
        raise ModelLoadError(f"model file {p} could not be read ({exc.strerror or exc})", p) from exc
    except ModelLoadError:
        raise
    except Exception:  # noqa: BLE001 - an unusual pickle: no answer rather than an error
        return None, None
    try:
        return _torch_width_from(root), inputs
    except RecursionError:
        return None, inputs


def torch_input_width(path: str | os.PathLike) -> int | None:
    """The in_features of the first Linear layer, read from a zip-format torch file without torch.

    Returns None when the file does not say (legacy non-zip torch.save files, no Linear layer).
    Raises ModelLoadError when the file is missing or is neither a zip archive nor a pickle, and
    (code FS428) when its forward() takes several tensors (a TorchScript archive's code says so).
    """
    p = pathlib.Path(path)
    width, inputs = _archive_facts(p)
    if inputs is not None and (problem := input_problem(p, inputs)) is not None:
        raise ModelLoadError(problem, p, code="FS428")
    return width


# layers a Sequential's output keeps the width of (one value out per value in, row by row); Softmax and
# LogSoftmax only along the columns (dim 1 or -1; dim 0 the loader refuses: it mixes the rows)
_SAME_WIDTH = frozenset({"ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish",
                         "Sigmoid", "Hardsigmoid", "Tanh", "Hardtanh", "Softplus", "Softsign", "Identity",
                         "Dropout", "AlphaDropout"})
_ROW_WISE = frozenset({"Softmax", "LogSoftmax"})
_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs")


def _torch_class(obj) -> str | None:
    """The torch.nn class name of a stub (eager ``torch.nn.modules.x.Cls`` or scripted
    ``__torch__.torch.nn.modules.x[.___torch_mangle_N].Cls``), None for any other class (a user's
    subclass may compute anything) or a module with a forward hook (which may replace its output)."""
    if not isinstance(obj, _Stub):
        return None
    module, name = obj._qual
    module = module.split(".___torch_mangle")[0].removeprefix("__torch__.")
    if not module.startswith("torch.nn.modules."):
        return None
    st = _state(obj)
    if any(isinstance(st.get(h), dict) and len(dict.keys(st[h])) for h in _HOOKS):
        return None
    return name


def _children(obj) -> list | None:
    """A Sequential's children in their order (eager: its ``_modules``; scripted: its attributes "0", "1", ...)."""
    st = _state(obj)
    mods = st.get("_modules")
    if isinstance(mods, dict):
        return list(mods.values())
    keys = sorted((k for k in st if isinstance(k, str) and k.isdigit()), key=int)
    return [st[k] for k in keys] if keys else None


def _out_width(obj, depth: int = 0) -> int | None:
    """The column count of what ``obj`` returns for an [N, d] batch, when its classes say so: a Linear's
    out_features, a Sequential's last width-setting child's (behind layers of _SAME_WIDTH); else None."""
    name = _torch_class(obj)
    if name == "Linear":
        st = _state(obj)
        w = st.get("out_features")
        if isinstance(w, int) and not isinstance(w, bool) and w > 0:
            return w
        weight = st.get("weight")
        if weight is None and isinstance(st.get("_parameters"), dict):
            weight = st["_parameters"].get("weight")
        return int(weight.shape[0]) if isinstance(weight, _FakeTensor) and len(weight.shape) == 2 else None
    if name != "Sequential" or depth > 32:
        return None
    for child in reversed(_children(obj) or []):
        kind = _torch_class(child)
        if kind in _SAME_WIDTH:
            continue
        if kind in _ROW_WISE:
            dim = _state(child).get("dim")
            if dim in (1, -1) or (dim is None and "dim" not in _state(child)):   # scripted: dim in the code
                continue
            return None
        return _out_width(child, depth + 1)
    return None


def torch_output_columns(path, output=None) -> int | None:
    """The column count of a torch model's output read without torch (lint's FS213 on max_rows,
    sema.options.output_columns): known only for an ``nn.Sequential`` (eager or scripted, no forward
    hooks) ending in a Linear layer, possibly followed by element-wise activations, Dropout or a Softmax
    over the columns; None for any other module (its forward may compute anything: only running it
    tells), a legacy pickle, or a declaration choosing an ``output`` (a Sequential returns one tensor)."""
    if output not in (None, 0):
        return None
    p = pathlib.Path(path)
    try:
        with open(p, "rb") as fh:
            if not fh.read(4).startswith(b"PK"):
                return None
        with zipfile.ZipFile(p) as zf:
            names = [n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") <= 1]
            if not names or zf.getinfo(names[0]).file_size > _MAX_PICKLE_BYTES:
                return None
            with zf.open(names[0]) as fh:
                root = _InertUnpickler(fh).load()
        return _out_width(root)
    except Exception:  # noqa: BLE001 - an unreadable file: the loader says what is wrong at check time
        return None
