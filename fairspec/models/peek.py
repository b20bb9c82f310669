"""Cheap look-ups into model files, without importing onnx, torch or scikit-learn.

`fairspec lint` has 0.3 s for everything; `import onnx` alone costs ~0.12 s and
`import sklearn` ~0.8 s, so the input width is read straight from the files:

* ONNX: a small protobuf wire-format reader walks ModelProto -> graph -> input ->
  type -> tensor_type -> shape -> dim.
* skops: the file is a zip; `schema.json` holds the estimator's attributes,
  `n_features_in_` among them.
* torch: the archive's data.pkl is read by an unpickler whose every global is an
  inert stub (nothing from the file is imported or called), and the first Linear
  layer's in_features is taken. Safe without `trust pickle`: no code runs.
"""

from __future__ import annotations

import json
import mmap
import os
import pathlib
import pickle
import struct
import zipfile
from dataclasses import dataclass, field

from fairspec import filecache

from .base import ModelLoadError


class _WireError(Exception):
    pass


# --------------------------------------------------------------------------------------
# protobuf wire format
# --------------------------------------------------------------------------------------

def _varint(buf, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise _WireError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _WireError("varint too long")


def _fields(buf, start: int, end: int):
    """Yield (field_number, wire_type, value) for one message in buf[start:end].

    value is the integer for varints, a (start, end) pair for length-delimited
    fields and None for fixed-width ones. Groups (wire types 3/4) are not used
    by ONNX and count as malformed input.
    """
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos, end)
        fnum, wt = key >> 3, key & 7
        if fnum == 0:
            raise _WireError("field number 0")
        if wt == 0:
            val, pos = _varint(buf, pos, end)
            yield fnum, wt, val
        elif wt == 2:
            ln, pos = _varint(buf, pos, end)
            if pos + ln > end:
                raise _WireError("length past end")
            yield fnum, wt, (pos, pos + ln)
            pos += ln
        elif wt == 1:
            pos += 8
            if pos > end:
                raise _WireError("truncated fixed64")
            yield fnum, wt, None
        elif wt == 5:
            pos += 4
            if pos > end:
                raise _WireError("truncated fixed32")
            yield fnum, wt, None
        else:
            raise _WireError(f"wire type {wt}")
    if pos != end:
        raise _WireError("message overruns its length")


def _string(buf, span) -> str:
    return bytes(buf[span[0]:span[1]]).decode("utf-8", errors="replace")


@dataclass
class OnnxValueInfo:
    name: str
    elem_type: int | None = None        # TensorProto.DataType: 1 float, 11 double, ...
    shape: list[int | str | None] | None = None   # None: no shape recorded


@dataclass
class OnnxSignature:
    ir_version: int
    inputs: list[OnnxValueInfo] = field(default_factory=list)       # graph inputs that are not initializers
    outputs: list[OnnxValueInfo] = field(default_factory=list)
    nodes: list["OnnxNode"] = field(default_factory=list)
    nonfinite: str | None = None        # the first float initializer holding NaN or inf, by name


@dataclass
class OnnxNode:
    op_type: str
    name: str
    inputs: list[str]
    outputs: list[str]


def _node(buf, span) -> OnnxNode:
    n = OnnxNode("", "", [], [])
    for f, wt, v in _fields(buf, *span):
        if wt != 2:
            continue
        if f == 1:
            n.inputs.append(_string(buf, v))
        elif f == 2:
            n.outputs.append(_string(buf, v))
        elif f == 3:
            n.name = _string(buf, v)
        elif f == 4:
            n.op_type = _string(buf, v)
    return n


def _value_info(buf, span) -> OnnxValueInfo:
    vi = OnnxValueInfo(name="")
    for f, wt, v in _fields(buf, *span):
        if f == 1 and wt == 2:
            vi.name = _string(buf, v)
        elif f == 2 and wt == 2:                       # TypeProto
            for f2, wt2, v2 in _fields(buf, *v):
                if f2 == 1 and wt2 == 2:               # tensor_type
                    for f3, wt3, v3 in _fields(buf, *v2):
                        if f3 == 1 and wt3 == 0:
                            vi.elem_type = v3
                        elif f3 == 2 and wt3 == 2:     # TensorShapeProto
                            dims: list[int | str | None] = []
                            for f4, wt4, v4 in _fields(buf, *v3):
                                if f4 == 1 and wt4 == 2:   # Dimension
                                    d: int | str | None = None
                                    for f5, wt5, v5 in _fields(buf, *v4):
                                        if f5 == 1 and wt5 == 0:
                                            d = v5 if v5 < (1 << 63) else v5 - (1 << 64)
                                        elif f5 == 2 and wt5 == 2:
                                            d = _string(buf, v5)
                                    dims.append(d)
                            vi.shape = dims
    return vi


def _initializer_name(buf, span) -> str | None:
    for f, wt, v in _fields(buf, *span):
        if f == 8 and wt == 2:
            return _string(buf, v)
    return None


_FLOAT_TYPES = {1: "f", 11: "d", 10: "e"}   # TensorProto FLOAT, DOUBLE, FLOAT16 (little-endian in the file)


def _all_finite(buf, a: int, b: int, code: str) -> bool:
    """Every little-endian float of type ``code`` in buf[a:b] is finite (no numpy: lint stays light)."""
    import math
    import struct
    import sys
    from array import array

    size = struct.calcsize(code)
    n = (b - a) // size
    if n == 0:
        return True
    raw = bytes(buf[a:a + n * size])
    if code == "e":
        vals = [v for (v,) in struct.iter_unpack("<e", raw)]
    else:
        vals = array(code)
        vals.frombytes(raw)
        if sys.byteorder == "big":
            vals.byteswap()
    if math.isfinite(sum(vals)):  # one pass in C; a NaN or an inf makes the sum NaN or inf
        return True
    return all(math.isfinite(v) for v in vals)  # or the finite values overflowed the sum


def _initializer_finite(buf, span) -> bool:
    """False when a float initializer (raw_data, float_data or double_data) holds NaN or inf."""
    dtype, chunks = None, []
    for f, wt, v in _fields(buf, *span):
        if f == 2 and wt == 0:
            dtype = _FLOAT_TYPES.get(v)
        elif wt == 2 and f in (4, 9, 10):
            chunks.append((f, v))
    for f, (a, b) in chunks:
        code = {4: "f", 10: "d"}.get(f, dtype)
        if code is not None and not _all_finite(buf, a, b, code):
            return False
    return True


def _parse_onnx_signature(buf, size: int) -> OnnxSignature:
    ir_version = None
    graph = None
    for f, wt, v in _fields(buf, 0, size):
        if f == 1:
            if wt != 0:
                raise _WireError("ir_version is not a varint")
            ir_version = v
        elif f == 7:
            if wt != 2:
                raise _WireError("graph is not a message")
            graph = v                                  # the last one wins, as in protobuf
    if ir_version is None or graph is None:
        raise _WireError("no ir_version or no graph")
    inputs, outputs, init_spans, nodes = [], [], [], []
    for f, wt, v in _fields(buf, *graph):
        if wt != 2:
            continue
        if f == 1:
            nodes.append(_node(buf, v))
        elif f == 11:
            inputs.append(_value_info(buf, v))
        elif f == 12:
            outputs.append(_value_info(buf, v))
        elif f == 5:
            init_spans.append(v)
    if init_spans and len(inputs) > 1:                 # old-style models list initializers as inputs
        names = {_initializer_name(buf, s) for s in init_spans}
        inputs = [i for i in inputs if i.name not in names]
    bad = next((sp for sp in init_spans if not _initializer_finite(buf, sp)), None)
    return OnnxSignature(ir_version=ir_version, inputs=inputs, outputs=outputs, nodes=nodes,
                         nonfinite=None if bad is None else (_initializer_name(buf, bad) or "?"))


def read_onnx_signature(path: str | os.PathLike) -> OnnxSignature:
    """The graph inputs (initializers excluded) and outputs of an ONNX file.

    Raises ModelLoadError when the file is missing or is not an ONNX protobuf.
    """
    p = pathlib.Path(path)
    _require_file(p)
    try:
        with open(p, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise _WireError("empty file")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return _parse_onnx_signature(buf, size)
    except _WireError as exc:
        raise ModelLoadError(
            f"{p} is not an ONNX model file (it does not parse as an ONNX protobuf)", p
        ) from exc
    except OSError as exc:
        raise ModelLoadError(f"model file {p} could not be read ({exc.strerror or exc})", p) from exc


def onnx_input_width(sig: OnnxSignature) -> int | None:
    if len(sig.inputs) > 1:                             # one input per column (skl2onnx): one column each
        ok = all(i.shape is None or len(i.shape) == 1 or (len(i.shape) == 2 and i.shape[1] in (1, None))
                 for i in sig.inputs)
        return len(sig.inputs) if ok else None
    if len(sig.inputs) != 1:
        return None
    shape = sig.inputs[0].shape
    if shape is None or len(shape) != 2:
        return None
    w = shape[1]
    return w if isinstance(w, int) and w > 0 else None


# --------------------------------------------------------------------------------------
# skops
# --------------------------------------------------------------------------------------

def _attrs(node) -> dict | None:
    """The attribute dict of an ObjectNode-like schema node."""
    if not isinstance(node, dict):
        return None
    content = node.get("content")
    if isinstance(content, dict) and content.get("__loader__") == "DictNode":
        inner = content.get("content")
        return inner if isinstance(inner, dict) else None
    return None


def _npy_int_scalar(zf: zipfile.ZipFile, name: str) -> int | None:
    """An integer scalar saved with np.save, read without numpy."""
    try:
        data = zf.read(name)
    except KeyError:
        return None
    if not data.startswith(b"\x93NUMPY"):
        return None
    major = data[6]
    if major == 1:
        hlen = struct.unpack_from("<H", data, 8)[0]
        hstart = 10
    else:
        hlen = struct.unpack_from("<I", data, 8)[0]
        hstart = 12
    header = data[hstart:hstart + hlen].decode("latin1")
    body = data[hstart + hlen:]
    fmts = {"<i8": "<q", "<i4": "<i", "<u8": "<Q", "<u4": "<I", "|i1": "<b", "|u1": "<B",
            "<i2": "<h", "<u2": "<H", ">i8": ">q", ">i4": ">i"}
    for descr, fmt in fmts.items():
        if f"'descr': '{descr}'" in header and "'shape': ()" in header:
            if len(body) >= struct.calcsize(fmt):
                return int(struct.unpack_from(fmt, body, 0)[0])
    return None


def _schema_int(zf: zipfile.ZipFile, node) -> int | None:
    if not isinstance(node, dict):
        return None
    if node.get("__loader__") == "JsonNode" or node.get("is_json"):
        try:
            val = json.loads(node.get("content"))
        except (TypeError, ValueError):
            return None
        return val if isinstance(val, int) and not isinstance(val, bool) else None
    if node.get("__loader__") == "NdArrayNode" and isinstance(node.get("file"), str):
        return _npy_int_scalar(zf, node["file"])
    return None


def _skops_width(zf: zipfile.ZipFile, node, depth: int = 0) -> int | None:
    if depth > 12:
        return None
    attrs = _attrs(node)
    if attrs is None:
        return None
    if "n_features_in_" in attrs:
        return _schema_int(zf, attrs["n_features_in_"])
    # Pipelines keep the width on their first step.
    steps = attrs.get("steps")
    if isinstance(steps, dict) and steps.get("__loader__") == "ListNode":
        for step in steps.get("content") or []:
            pair = step.get("content") if isinstance(step, dict) else None
            if not isinstance(pair, list) or len(pair) != 2:
                return None
            est = pair[1]
            if isinstance(est, dict) and est.get("__loader__") == "JsonNode":
                continue                               # "passthrough" / None
            return _skops_width(zf, est, depth + 1)
    for key in ("best_estimator_", "estimator_", "estimator"):
        if key in attrs:
            w = _skops_width(zf, attrs[key], depth + 1)
            if w is not None:
                return w
    return None


def skops_input_width(path: str | os.PathLike) -> int | None:
    p = pathlib.Path(path)
    _require_file(p)
    try:
        with zipfile.ZipFile(p) as zf:
            try:
                raw = zf.read("schema.json")
            except KeyError:
                raise ModelLoadError(
                    f"{p} is not a skops file (the zip archive has no schema.json)", p
                ) from None
            try:
                schema = json.loads(raw)
            except ValueError as exc:
                raise ModelLoadError(f"{p} is not a skops file (its schema.json is not valid JSON)", p) from exc
            return _skops_width(zf, schema)
    except zipfile.BadZipFile as exc:
        raise ModelLoadError(f"{p} is not a skops file (a skops file is a zip archive and this is not one)", p) from exc
    except OSError as exc:
        raise ModelLoadError(f"model file {p} could not be read ({exc.strerror or exc})", p) from exc
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - zlib.error, NotImplementedError, EOFError from a damaged zip
        raise ModelLoadError(f"{p} is not a readable skops file (its zip archive is damaged)", p) from exc



# --------------------------------------------------------------------------------------
# torch (TorchScript archives and zip-format torch.save files)
# --------------------------------------------------------------------------------------

_MAX_PICKLE_BYTES = 64 << 20


class _FakeTensor:
    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = tuple(shape) if isinstance(shape, (tuple, list)) else ()


class _Stub(dict):
    """Stands in for every class a pickle names: records its arguments and state, runs nothing."""

    _qual = ("", "")

    def __new__(cls, *args, **kwargs):
        obj = dict.__new__(cls)
        obj._stub_args = args
        obj._stub_state = None
        return obj

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self._stub_state = state

    def append(self, item):
        pass

    def extend(self, items):
        pass


def _rebuild_tensor(storage=None, offset=None, size=(), *args, **kwargs):
    return _FakeTensor(size)


def _rebuild_parameter(data=None, *args, **kwargs):
    return data


class _InertUnpickler(pickle.Unpickler):
    def __init__(self, fh):
        super().__init__(fh)
        self._classes: dict[tuple[str, str], type] = {}

    def find_class(self, module, name):
        if module == "torch._utils":
            if name.startswith("_rebuild_tensor"):
                return _rebuild_tensor
            if name.startswith("_rebuild_parameter"):
                return _rebuild_parameter
        key = (str(module), str(name))
        cls = self._classes.get(key)
        if cls is None:
            cls = type("Stub", (_Stub,), {"_qual": key})
            self._classes[key] = cls
        return cls

    def persistent_load(self, pid):
        return None


def _state(obj) -> dict:
    st = obj._stub_state if isinstance(obj, _Stub) else None
    if isinstance(st, tuple):
        st = next((p for p in st if isinstance(p, dict)), None)
    return st if isinstance(st, dict) else {}


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
    first_weight = None
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
                return w
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


def torch_input_width(path: str | os.PathLike) -> int | None:
    """The in_features of the first Linear layer, read from a zip-format torch file without torch.

    Returns None when the file does not say (legacy non-zip torch.save files, no Linear layer).
    Raises ModelLoadError when the file is missing or is neither a zip archive nor a pickle.
    """
    p = pathlib.Path(path)
    _require_file(p)
    try:
        with open(p, "rb") as fh:
            head = fh.read(4)
        if head[:1] == b"\x80":
            return None                                  # legacy torch.save: several pickles in a row
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
                return None
            with zf.open(info) as fh:
                root = _InertUnpickler(fh).load()
    except zipfile.BadZipFile as exc:
        raise ModelLoadError(f"{p} is not a torch model file (it looks like a zip archive but is damaged)", p) from exc
    except OSError as exc:
        raise ModelLoadError(f"model file {p} could not be read ({exc.strerror or exc})", p) from exc
    except ModelLoadError:
        raise
    except Exception:  # noqa: BLE001 - an unusual pickle: no answer rather than an error
        return None
    try:
        return _torch_width_from(root)
    except RecursionError:
        return None

def _estimator_width(obj, depth: int = 0) -> int | None:
    """n_features_in_ of a stubbed estimator (or of the first step of a pipeline, or of a
    search's best estimator)."""
    if depth > 8 or not isinstance(obj, _Stub):
        return None
    st = _state(obj)
    w = st.get("n_features_in_")
    if isinstance(w, int) and not isinstance(w, bool) and w > 0:
        return w
    steps = st.get("steps")
    if isinstance(steps, list) and steps:
        first = steps[0]
        if isinstance(first, tuple) and len(first) == 2:
            return _estimator_width(first[1], depth + 1)
    for key in ("best_estimator_", "estimator_", "estimator"):
        if key in st:
            w = _estimator_width(st[key], depth + 1)
            if w is not None:
                return w
    return None


def _load_inert_pickle(p: pathlib.Path):
    """The pickle's object tree with every class a stub (nothing runs), or None."""
    try:
        if p.stat().st_size > _MAX_PICKLE_BYTES:
            return None
        with open(p, "rb") as fh:
            if fh.read(1) != b"\x80":                   # not a protocol-2+ pickle (e.g. compressed joblib)
                return None
            fh.seek(0)
            return _InertUnpickler(fh).load()
    except Exception:  # noqa: BLE001 - an unusual pickle: no answer
        return None


def sklearn_pickle_estimator(path: str | os.PathLike, final: bool = False) -> tuple[str, str | None] | None:
    """(class name, MLP activation or None) of a pickled scikit-learn estimator, read inertly;
    None when the file does not say. ``final``: of a Pipeline's last step (its estimator)."""
    root = _load_inert_pickle(pathlib.Path(path))
    if not isinstance(root, _Stub):
        return None
    for _ in range(4):
        steps = _state(root).get("steps") if final and root._qual[1] == "Pipeline" else None
        last = steps[-1] if isinstance(steps, list) and steps else None
        if not (isinstance(last, tuple) and len(last) == 2 and isinstance(last[1], _Stub)):
            break
        root = last[1]
    act = _state(root).get("activation")
    return root._qual[1], act if isinstance(act, str) else None


def sklearn_pickle_input_width(path: str | os.PathLike) -> int | None:
    """``n_features_in_`` of a pickled scikit-learn estimator, read by the inert unpickler
    (every class it names is a stub: nothing from the file is imported or run, so this is
    safe without `trust pickle`). None when the file does not say (joblib's compressed or
    array-interleaved formats, an unusual pickle)."""
    p = pathlib.Path(path)
    _require_file(p)
    root = _load_inert_pickle(p)
    try:
        return _estimator_width(root)
    except RecursionError:
        return None


# --------------------------------------------------------------------------------------

def _require_file(p: pathlib.Path) -> None:
    if not p.exists():
        raise ModelLoadError(f"model file {p} does not exist", p)
    if not p.is_file():
        raise ModelLoadError(f"model path {p} is not a file", p)


@filecache.by_file(lambda format, path, **kw: path)
def peek_input_width(format: str, path, *, trust_pickle: bool = False) -> int | None:
    """The model's input width read cheaply from the file (for `fairspec lint`).

    Imports no machine-learning library. Returns None when the file does not say;
    raises ModelLoadError only when the file is missing or clearly not of that format.
    """
    from .base import normalize_format

    fmt = normalize_format(format, path)
    p = pathlib.Path(path)
    if fmt == "onnx":
        sig = read_onnx_signature(p)
        if sig.nonfinite is not None:  # NaN weights read as "every decision negative": refused in lint too
            raise ModelLoadError(f"model {p} has NaN or infinite weights (initializer {sig.nonfinite!r}); a model "
                                 "with weights that are not finite numbers cannot be checked", p)
        return onnx_input_width(sig)
    if fmt == "sklearn":
        suffix = p.suffix.lower()
        if suffix == ".skops":
            return skops_input_width(p)
        return sklearn_pickle_input_width(p)           # read inertly: nothing in the file runs
    if fmt == "xgboost":
        return xgboost_input_width(p)
    if fmt == "lightgbm":
        return lightgbm_input_width(p)
    return torch_input_width(p)                         # torch


def xgboost_input_width(p: pathlib.Path) -> int | None:
    """num_feature of an XGBoost model file (JSON or UBJSON), after checking every tree
    (fairspec.models.treefile: a file the library would crash on is a ModelLoadError here)."""
    from .treefile import check_xgboost

    _require_file(p)
    return check_xgboost(p)


def lightgbm_input_width(p: pathlib.Path) -> int | None:
    """max_feature_idx + 1 of a LightGBM text model file, after checking every tree (fairspec.models.treefile)."""
    from .treefile import check_lightgbm

    _require_file(p)
    return check_lightgbm(p)


def peek_output_columns(format: str, path, output: str | int | None = None) -> int | None:
    """The column count of the model's chosen output, read cheaply (ONNX: the graph output's
    declared shape); None when the file does not say. For lint's readout check (FS413)."""
    from .base import normalize_format

    try:
        if normalize_format(format, path) != "onnx":
            return None
        sig = read_onnx_signature(pathlib.Path(path))
    except ModelLoadError:
        return None
    outs = sig.outputs
    if output is None:
        chosen = outs[:1]
    elif isinstance(output, int) and not isinstance(output, bool):
        chosen = [outs[output]] if -len(outs) <= output < len(outs) else []
    else:
        chosen = [o for o in outs if o.name == output]
    if not chosen or chosen[0].shape is None:
        return None
    shape = chosen[0].shape
    if len(shape) == 1:
        return 1
    if len(shape) == 2 and isinstance(shape[1], int) and shape[1] > 0:
        return shape[1]
    return None


# --------------------------------------------------------------------------------------
# can the model become a piecewise-linear network? (for lint: the milp, smt and pba backends)
# --------------------------------------------------------------------------------------

# The ONNX operators fairspec.models.network.from_onnx reads (it raises UnsupportedModel for any other).
PL_ONNX_OPS = frozenset({"Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Relu", "Identity", "Dropout", "Flatten",
                         "Transpose", "Sigmoid", "Softmax", "Constant"})
# scikit-learn estimators fairspec.models.network.from_sklearn reads
PL_SKLEARN = frozenset({"MLPClassifier", "LogisticRegression"})


@filecache.by_file(lambda format, path, *a, **kw: path)
def piecewise_linear_obstacle(format: str, path, output: str | int | None = None) -> str | None:
    """Why the model file certainly cannot be read as a ReLU network, or None.

    Cheap (no ML library): ONNX operators that feed the chosen output, a skops
    estimator's class and MLP activation. None also when the file does not tell
    (torch, pickles, a damaged file: the loader reports those at check time).
    """
    from .base import normalize_format

    try:
        fmt = normalize_format(format, path)
        p = pathlib.Path(path)
        if fmt == "onnx":
            return _onnx_obstacle(read_onnx_signature(p), output)
        if fmt == "sklearn" and p.suffix.lower() == ".skops":
            with zipfile.ZipFile(p) as zf:
                schema = json.loads(zf.read("schema.json"))
            return _skops_obstacle(schema)
        if fmt == "sklearn":
            est = sklearn_pickle_estimator(p, final=True)
            return None if est is None else _estimator_obstacle(*est)
    except Exception:  # noqa: BLE001 - lint says nothing here; the loader gives the sentence at check time
        return None
    return None


def _onnx_obstacle(sig: OnnxSignature, output) -> str | None:
    outs = [o.name for o in sig.outputs]
    if not outs:
        return None
    if output is None:
        target = outs[0]
    elif isinstance(output, int) and not isinstance(output, bool):
        target = outs[output] if 0 <= output < len(outs) else None
    else:
        target = output if output in outs else None
    if target is None:
        return None
    producer = {o: n for n in sig.nodes for o in n.outputs}
    seen, stack, feeding = set(), [target], []
    while stack:
        t = stack.pop()
        n = producer.get(t)
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        feeding.append(n)
        stack.extend(i for i in n.inputs if i)
    bad = [n for n in feeding if n.op_type not in PL_ONNX_OPS]
    if not bad:
        return None
    n = bad[-1]                                        # the one nearest the input
    return (f"operator {n.op_type} (node {n.name or n.outputs[0]}) is not piecewise-linear or not supported "
            f"(supported: ReLU networks of Gemm/MatMul/Add layers with a final Sigmoid or Softmax)")


# scikit-learn tree models fairspec.models.trees.from_sklearn reads (the tree encodings)
TREE_SKLEARN = frozenset({"DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier",
                          "GradientBoostingClassifier", "HistGradientBoostingClassifier"})
TREE_FORMATS = ("xgboost", "lightgbm")


def tree_file_class(format: str, path) -> str | None:
    """The tree model a file holds ("XGBoost", "LightGBM" or the scikit-learn estimator's class),
    or None (not a tree model, or the file does not tell). Cheap: no ML library."""
    fmt = str(format).strip().lower()
    if fmt in TREE_FORMATS:
        return {"xgboost": "XGBoost", "lightgbm": "LightGBM"}[fmt]
    p = pathlib.Path(path)
    if fmt in ("sklearn", "scikit-learn", "skops") and p.suffix.lower() == ".skops":
        try:
            with zipfile.ZipFile(p) as zf:
                cls = skops_final_node(json.loads(zf.read("schema.json"))).get("__class__")
        except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
            return None
        return cls if cls in TREE_SKLEARN else None
    if fmt in ("sklearn", "scikit-learn", "skops"):
        est = sklearn_pickle_estimator(p, final=True) if p.is_file() else None
        return est[0] if est is not None and est[0] in TREE_SKLEARN else None
    return None


# tree models whose output is a probability averaged over trees (not a logit)
AVERAGING_TREES = frozenset({"DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier"})


def is_tree_file(format: str, path) -> bool:
    """Does the file hold a tree model (XGBoost, LightGBM, a scikit-learn tree in a skops file
    or a pickle)?"""
    return tree_file_class(format, path) is not None


def skops_final_node(schema):
    """The schema node of a skops Pipeline's last step (the estimator after the preprocessing);
    the node itself when it is not a Pipeline."""
    for _ in range(4):
        if not (isinstance(schema, dict) and schema.get("__class__") == "Pipeline"):
            return schema
        attrs = _attrs(schema) or {}
        steps = attrs.get("steps")
        content = steps.get("content") if isinstance(steps, dict) else None
        if not content:
            return schema
        pair = content[-1].get("content") if isinstance(content[-1], dict) else None
        if not isinstance(pair, list) or len(pair) != 2:
            return schema
        schema = pair[1]
    return schema


def skops_top_class(path) -> str | None:
    """The class name of the object a skops file holds (e.g. "Pipeline"), or None."""
    try:
        with zipfile.ZipFile(pathlib.Path(path)) as zf:
            cls = json.loads(zf.read("schema.json")).get("__class__")
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None
    return cls if isinstance(cls, str) else None


def _skops_obstacle(schema: dict) -> str | None:
    schema = skops_final_node(schema)
    cls = schema.get("__class__")
    if not isinstance(cls, str):
        return None
    act = schema.get("content", {}).get("activation")
    act = act.get("content") if isinstance(act, dict) else act
    return _estimator_obstacle(cls, act if isinstance(act, str) else None)


def _estimator_obstacle(cls: str, activation: str | None) -> str | None:
    if cls not in PL_SKLEARN:
        return f"estimator {cls} is not a ReLU MLP or a logistic regression"
    if cls == "MLPClassifier" and activation is not None and activation not in ("relu", "identity"):
        return f"MLPClassifier activation {activation!r} is not piecewise-linear"
    return None


# scikit-learn estimators the repair backend (FairRepair) patches
REPAIRABLE_SKLEARN = ("DecisionTreeClassifier", "RandomForestClassifier")


def repair_obstacle(format: str, path) -> str | None:
    """Why the model certainly cannot be repaired (FairRepair patches scikit-learn decision trees and
    random forests), read cheaply: the model's format and a skops file's estimator class.  None when
    the file does not tell (a pickle, a damaged file: check reports those)."""
    from .base import normalize_format

    supported = "repair supports scikit-learn DecisionTreeClassifier and RandomForestClassifier"
    try:
        fmt = normalize_format(format, path)
    except Exception:  # noqa: BLE001 - the loader says what is wrong at check time
        return None
    if fmt in ("onnx", "torch"):
        return f"{supported}; this is a{'n' if fmt == 'onnx' else ''} {fmt.upper() if fmt == 'onnx' else fmt} network"
    if fmt == "rule":
        return f"{supported}; this is a rule model"
    if fmt != "sklearn" or pathlib.Path(path).suffix.lower() != ".skops":
        return None
    try:
        with zipfile.ZipFile(path) as zf:
            cls = skops_final_node(json.loads(zf.read("schema.json"))).get("__class__")   # a Pipeline's estimator
    except Exception:  # noqa: BLE001
        return None
    if not isinstance(cls, str) or cls in REPAIRABLE_SKLEARN:
        return None
    what = ("a regression model" if "Regressor" in cls or cls.endswith("Regression") and cls != "LogisticRegression"
            else "a gradient-boosted ensemble" if "Boosting" in cls
            else "a network" if cls.startswith("MLP") else "not a tree model")
    return f"{supported}; this is a {cls} ({what})"


# --------------------------------------------------------------------------------------
# input names (issue 20 item 6): the feature names a model file records, read cheaply
# --------------------------------------------------------------------------------------

def _names(seq) -> tuple[str, ...] | None:
    if not isinstance(seq, (list, tuple)) or not seq or not all(isinstance(s, str) for s in seq):
        return None
    return tuple(seq)


def xgboost_input_names(p: pathlib.Path) -> tuple[str, ...] | None:
    """``learner.feature_names`` of an XGBoost JSON model file (a model fit on a DataFrame keeps
    its column names there); None for UBJSON or when the file records none."""
    try:
        with open(p, "rb") as fh:
            head = fh.read(1)
            if head != b"{":
                return None
            doc = json.loads(head + fh.read())
        return _names(doc["learner"].get("feature_names"))
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None


def lightgbm_input_names(p: pathlib.Path) -> tuple[str, ...] | None:
    """The ``feature_names=`` line of a LightGBM text model file (``Column_0`` ... when the model
    was fit on an array)."""
    try:
        with open(p, "rb") as fh:
            for _ in range(64):
                line = fh.readline()
                if not line:
                    break
                if line.startswith(b"feature_names="):
                    return _names(line.split(b"=", 1)[1].decode("utf-8", "replace").split())
    except OSError:
        return None
    return None


def _skops_names(node, depth: int = 0) -> tuple[str, ...] | None:
    """``feature_names_in_`` of a skops schema node (a pipeline's first step, a search's estimator)."""
    if depth > 12:
        return None
    attrs = _attrs(node)
    if attrs is None:
        return None
    arr = attrs.get("feature_names_in_")
    if isinstance(arr, dict):
        out = []
        for item in arr.get("content") or []:
            if not (isinstance(item, dict) and item.get("__loader__") == "JsonNode"):
                return None
            try:
                out.append(json.loads(item["content"]))
            except (KeyError, TypeError, ValueError):
                return None
        return _names(out)
    steps = attrs.get("steps")
    if isinstance(steps, dict) and steps.get("__loader__") == "ListNode":
        for step in steps.get("content") or []:
            pair = step.get("content") if isinstance(step, dict) else None
            if not isinstance(pair, list) or len(pair) != 2:
                return None
            est = pair[1]
            if isinstance(est, dict) and est.get("__loader__") == "JsonNode":
                continue
            return _skops_names(est, depth + 1)
    for key in ("best_estimator_", "estimator_", "estimator"):
        if key in attrs:
            names = _skops_names(attrs[key], depth + 1)
            if names is not None:
                return names
    return None


def skops_input_names(p: pathlib.Path) -> tuple[str, ...] | None:
    try:
        with zipfile.ZipFile(p) as zf:
            return _skops_names(json.loads(zf.read("schema.json")))
    except Exception:  # noqa: BLE001 - the width peek and the loader report a damaged file
        return None


@filecache.by_file(lambda format, path, **kw: path)
def peek_input_names(format: str, path) -> tuple[str, ...] | None:
    """The input names the model file records, in the model's input order, or None when it
    records none: XGBoost ``feature_names``, LightGBM ``feature_names``, scikit-learn
    ``feature_names_in_`` (skops files; pickles are not read for this), the graph inputs of an
    ONNX model with one input per column. torch files record none. Imports no
    machine-learning library and never raises for a file the width peek accepts."""
    from .base import normalize_format

    try:
        fmt = normalize_format(format, path)
    except ModelLoadError:
        return None
    p = pathlib.Path(path)
    if not p.is_file():
        return None
    if fmt == "xgboost":
        return xgboost_input_names(p)
    if fmt == "lightgbm":
        return lightgbm_input_names(p)
    if fmt == "sklearn" and p.suffix.lower() == ".skops":
        return skops_input_names(p)
    if fmt == "onnx":
        try:
            sig = read_onnx_signature(p)
        except ModelLoadError:
            return None
        return _names([i.name for i in sig.inputs]) if len(sig.inputs) > 1 else None
    return None
