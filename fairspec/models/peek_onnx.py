"""The ONNX family of the cheap model-file look-ups (fairspec.models.peek): a small protobuf wire-format
reader walks ModelProto -> graph -> input/output -> type -> tensor_type -> shape -> dim, and the graph's
nodes and initializers, without importing onnx (`import onnx` alone costs ~0.12 s of lint's 0.3 s)."""

from __future__ import annotations

import mmap
import os
import pathlib
from dataclasses import dataclass, field

from fairspec import filecache

from .base import ModelLoadError, require_file


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
    not_tensor: bool = False            # a sequence or map (skl2onnx's ZipMap), not a tensor


@dataclass
class OnnxSignature:
    ir_version: int
    inputs: list[OnnxValueInfo] = field(default_factory=list)       # graph inputs that are not initializers
    outputs: list[OnnxValueInfo] = field(default_factory=list)
    nodes: list["OnnxNode"] = field(default_factory=list)
    nonfinite: str | None = None        # the first float initializer holding NaN or inf, by name
    # (initializer name, location) of each initializer whose values are in an external data file
    external: list[tuple[str, str]] = field(default_factory=list)
    # what graph_problem reads: the element type of each graph input and initializer by name (all
    # graph inputs, initializers listed as inputs too), the opset version imported per domain ("" for
    # ai.onnx) and the (domain, name) of each function the model defines
    types: dict[str, int | None] | None = field(default_factory=dict)   # None: a sparse initializer
    dims: dict[str, tuple[int, ...]] = field(default_factory=dict)      # each initializer's shape, by name
    opsets: dict[str, int] = field(default_factory=dict)
    functions: set[tuple[str, str]] = field(default_factory=set)


@dataclass
class OnnxNode:
    op_type: str
    name: str
    inputs: list[str]
    outputs: list[str]
    # an ai.onnx.ml classifier's class labels (classlabels_strings / classlabels_int64s), in the
    # order of its probability columns (issue 25: prob(m(x), "label")); None for other nodes
    class_labels: tuple | None = None
    domain: str = ""
    ints: dict[str, int] = field(default_factory=dict)   # the node's int attributes (transB, Cast's to, ...)


_LABEL_ATTRS = ("classlabels_strings", "classlabels_int64s", "classlabels_ints")


def _class_labels(buf, span) -> tuple | None:
    """The labels of an AttributeProto named classlabels_* (name = 1, ints = 8, strings = 9)."""
    name, ints, strings = None, [], []
    for f, wt, v in _fields(buf, *span):
        if f == 1 and wt == 2:
            name = _string(buf, v)
        elif f == 8 and wt == 0:
            ints.append(v - (1 << 64) if v >= 1 << 63 else v)
        elif f == 8 and wt == 2:                     # packed
            pos, end = v
            while pos < end:
                x, pos = _varint(buf, pos, end)
                ints.append(x - (1 << 64) if x >= 1 << 63 else x)
        elif f == 9 and wt == 2:
            strings.append(_string(buf, v))
    if name not in _LABEL_ATTRS:
        return None
    return tuple(strings) if name == "classlabels_strings" else tuple(ints)


def _int_attribute(buf, span) -> tuple[str | None, int | None]:
    """(name, value) of an AttributeProto of type INT (name = 1, i = 3, type = 20: 2), else (name, None)."""
    name, i, kind = None, None, None
    for f, wt, v in _fields(buf, *span):
        if f == 1 and wt == 2:
            name = _string(buf, v)
        elif f == 3 and wt == 0:
            i = v - (1 << 64) if v >= 1 << 63 else v
        elif f == 20 and wt == 0:
            kind = v
    return name, (i if kind in (2, None) else None)


def _node(buf, span) -> OnnxNode:
    n = OnnxNode("", "", [], [])
    for f, wt, v in _fields(buf, *span):
        if wt != 2:
            continue
        if f == 5:
            labels = _class_labels(buf, v)
            if labels:
                n.class_labels = labels
            name, i = _int_attribute(buf, v)
            if name and i is not None:
                n.ints[name] = i
            continue
        if f == 1:
            n.inputs.append(_string(buf, v))
        elif f == 2:
            n.outputs.append(_string(buf, v))
        elif f == 3:
            n.name = _string(buf, v)
        elif f == 4:
            n.op_type = _string(buf, v)
        elif f == 7:
            n.domain = _string(buf, v)
    return n


def _value_info(buf, span) -> OnnxValueInfo:
    vi = OnnxValueInfo(name="")
    for f, wt, v in _fields(buf, *span):
        if f == 1 and wt == 2:
            vi.name = _string(buf, v)
        elif f == 2 and wt == 2:                       # TypeProto
            for f2, wt2, v2 in _fields(buf, *v):
                if f2 in (4, 5, 8, 9):                 # sequence, map, sparse tensor, optional
                    vi.not_tensor = True
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


def _external_location(buf, span) -> str | None:
    """The 'location' entry of a TensorProto whose data_location (14) is EXTERNAL (1): its
    external_data (13) is a list of StringStringEntryProto (key = 1, value = 2)."""
    external, location = False, None
    for f, wt, v in _fields(buf, *span):
        if f == 14 and wt == 0:
            external = v == 1
        elif f == 13 and wt == 2:
            entry = {k: _string(buf, x) for k, w, x in _fields(buf, *v) if w == 2 and k in (1, 2)}
            if entry.get(1) == "location":
                location = entry.get(2, "")
    return location if external else None


def missing_external_data(sig: OnnxSignature, path) -> str | None:
    """The sentence for the first initializer whose external data file (a path relative to the model
    file's folder) does not exist, else None. An absolute location or one leaving the folder is left
    to onnxruntime, which refuses it (it is never looked at here)."""
    folder = pathlib.Path(path).parent
    for name, loc in sig.external:
        rel = pathlib.PurePosixPath(loc.replace("\\", "/"))
        if not loc or rel.is_absolute() or ".." in rel.parts or ":" in loc:
            continue
        target = folder / rel
        if not os.path.lexists(target):
            return (f"ONNX model {path} keeps the values of initializer {name!r} in the external data file "
                    f"{target}, which does not exist")
    return None


# operators whose inputs all have one element type, which their first output has (the schemas' T)
_ONE_TYPE = frozenset({"Add", "Sub", "Mul", "Div", "MatMul", "Gemm", "Sum", "Max", "Min", "Mean", "Concat"})
# operators whose first output has the element type of their first input
_KEEPS_TYPE = frozenset({"Relu", "Sigmoid", "Softmax", "LogSoftmax", "Tanh", "Identity", "Dropout", "Flatten",
                         "Transpose", "Abs", "Neg", "Exp", "Log", "Sqrt", "LeakyRelu", "Elu", "Reshape", "Squeeze",
                         "Unsqueeze", "Floor", "Ceil", "Softplus", "HardSigmoid"})


def graph_problem(sig: OnnxSignature, path) -> str | None:
    """The sentence for a graph onnxruntime refuses to load, as far as the file's structure shows it
    (lint says it; the loader says it in place of onnxruntime's own message): no graph output, a graph
    output nothing computes, a node on a cycle, a node of a standard
    domain whose operator ONNX does not define at the opset the model imports (onnx_ops), a node
    reading a value that nothing defines, or a node whose inputs must share one element type and do
    not (the types followed from the graph inputs and initializers through the operators above).
    None when none of these shows; onnxruntime may still refuse the graph (a shape that does not
    match, an operator it has no kernel for): check then names the file and onnxruntime's reason."""
    from .onnx_ops import FIRST_VERSION, LATEST

    def node(n: OnnxNode) -> str:
        return f"node {(n.name or (n.outputs[0] if n.outputs else '?'))!r} ({n.op_type})"

    if not sig.outputs:                                # the loader says it before onnxruntime runs
        return f"ONNX model {path} declares no graph outputs"
    for n in sig.nodes:
        dom = "" if n.domain == "ai.onnx" else n.domain
        ver = sig.opsets.get(dom)
        if dom not in FIRST_VERSION or (n.domain, n.op_type) in sig.functions or ver is None or ver > LATEST[dom]:
            continue
        first = FIRST_VERSION[dom].get(n.op_type)
        if first is None or first > ver:
            why = ("" if first is None else f" at opset {ver}, the version the model imports ({n.op_type} "
                   f"came in opset {first})")
            return (f"ONNX model {path} cannot be run: {node(n)} uses operator {n.op_type!r}, which is no "
                    f"operator of ONNX's domain {dom or 'ai.onnx'}{why}")
    if sig.types is None:
        return None
    defined = set(sig.types) | {o for n in sig.nodes for o in n.outputs}
    for n in sig.nodes:
        if (undefined := next((i for i in n.inputs if i and i not in defined), None)) is not None:
            return (f"ONNX model {path} cannot be run: {node(n)} reads {undefined!r}, which is no graph input, "
                    f"no initializer and no node's output")
    for o in sig.outputs:
        if o.name not in defined:
            return (f"ONNX model {path} cannot be run: its graph output {o.name!r} is no graph input, no "
                    f"initializer and no node's output")
    if (looped := _cycle(sig)) is not None:
        return (f"ONNX model {path} cannot be run: {node(looped)} is on a cycle (a value it reads is computed "
                f"from its own output), and an ONNX graph is acyclic")
    types = dict(sig.types)
    widths = _input_widths(sig)
    for n in sig.nodes:
        t = None
        if n.domain in ("", "ai.onnx") and n.op_type in _ONE_TYPE:
            known = [(i, types[i]) for i in n.inputs if types.get(i) is not None]
            if len({k for _, k in known}) > 1:
                said = ", ".join(f"{i!r} {_type_name(k)}" for i, k in known)
                return (f"ONNX model {path} cannot be run: {node(n)} reads inputs of different element types "
                        f"({said}), which {n.op_type} takes of one type")
            t = known[0][1] if known else None
            if t in NO_CPU_KERNEL.get(n.op_type, ()):
                return (f"ONNX model {path} cannot be run: {node(n)} computes in {_type_name(t)}, an element type "
                        f"onnxruntime runs no {n.op_type} in")
        elif n.domain in ("", "ai.onnx") and n.op_type in _KEEPS_TYPE and n.inputs:
            t = types.get(n.inputs[0])
        elif n.domain in ("", "ai.onnx") and n.op_type == "Cast":
            t = n.ints.get("to")
        elif (only := _ONLY_TYPES.get((n.domain, n.op_type))) and types.get(n.inputs[0] if n.inputs else "") \
                not in (None, *only):
            return (f"ONNX model {path} cannot be run: {node(n)} reads {n.inputs[0]!r} in "
                    f"{_type_name(types[n.inputs[0]])}, and {n.op_type} takes {' or '.join(map(_type_name, only))} only")
        if (why := _width_problem(n, widths, sig.dims)) is not None:
            return f"ONNX model {path} cannot be run: {node(n)} {why}"
        if n.outputs and n.outputs[0] not in types:
            types[n.outputs[0]] = t
    for o in sig.outputs:       # onnxruntime refuses a graph output declared of another type than computed
        if o.elem_type and not o.not_tensor and types.get(o.name) not in (None, o.elem_type):
            return (f"ONNX model {path} cannot be run: its graph output {o.name!r} is declared "
                    f"{_type_name(o.elem_type)} but computed in {_type_name(types[o.name])}")
    return None


def _cycle(sig: OnnxSignature) -> OnnxNode | None:
    """A node on a cycle of the graph (every value a node reads is defined: graph_problem said so
    first), else None: the nodes are run in an order their inputs allow (Kahn's), and a node that
    never may is on a cycle or after one; the first of them on a cycle is returned."""
    available = set(sig.types or ())
    producer = {o: k for k, n in enumerate(sig.nodes) for o in n.outputs if o}
    waiting = [len({i for i in n.inputs if i and i not in available}) for n in sig.nodes]
    readers: dict[str, list[int]] = {}
    for k, n in enumerate(sig.nodes):
        for i in {i for i in n.inputs if i and i not in available}:
            readers.setdefault(i, []).append(k)
    ready = [k for k, w in enumerate(waiting) if w == 0]
    done = set()
    while ready:
        k = ready.pop()
        done.add(k)
        for o in sig.nodes[k].outputs:
            if o in available:
                continue
            available.add(o)
            for r in readers.get(o, ()):
                waiting[r] -= 1
                if waiting[r] == 0:
                    ready.append(r)
    if len(done) == len(sig.nodes):
        return None
    for k, n in enumerate(sig.nodes):                  # on a cycle: it reaches itself through what it reads
        if k in done:
            continue
        seen, stack = set(), [i for i in n.inputs if i and i not in available]
        while stack:
            v = stack.pop()
            j = producer.get(v)
            if j is None or j in seen or j in done:
                continue
            if j == k:
                return n
            seen.add(j)
            stack.extend(i for i in sig.nodes[j].inputs if i and i not in available)
    return None


def _type_name(k: int) -> str:
    return _ELEM_NAMES.get(k) or _FLOAT_ELEM_TYPES.get(k) or f"type {k}"


#: element types a node of these operators computes in that onnxruntime (1.32, CPU) refuses to load: ONNX's own
#: schemas take no 8- or 16-bit integers in Gemm or MatMul, and onnxruntime has no Gemm kernel for 32- and 64-bit
#: integers (tests/test_lint_sees_check.py loads each in onnxruntime: a newer one that runs them fails that test)
NO_CPU_KERNEL = {"Gemm": frozenset({2, 3, 4, 5, 6, 7, 12, 13}), "MatMul": frozenset({2, 3, 4, 5})}
#: (domain, operator) -> the only element types its first input may have (ONNX's schema; onnx.checker without
#: full_check does not look): skl2onnx's ZipMap after a float64 classifier is refused by onnxruntime
_ONLY_TYPES = {("ai.onnx.ml", "ZipMap"): (1,)}
#: operators of one input whose output has its input's shape
_SAME_SHAPE = frozenset({"Relu", "Sigmoid", "Tanh", "Identity", "Dropout", "Abs", "Neg", "Exp", "Log", "Sqrt",
                         "LeakyRelu", "Elu", "Floor", "Ceil", "Softplus", "HardSigmoid", "Softmax", "LogSoftmax"})


def _input_widths(sig: OnnxSignature) -> dict[str, int]:
    """The values of shape [N, width] with a known width: the graph inputs that declare one (followed
    through the graph by :func:`_width_problem`)."""
    return {i.name: i.shape[1] for i in sig.inputs
            if i.shape is not None and len(i.shape) == 2 and isinstance(i.shape[1], int) and i.shape[1] > 0}


def _width_problem(n: OnnxNode, widths: dict[str, int], dims: dict) -> str | None:
    """Why onnxruntime's shape inference refuses node ``n`` (a Gemm or MatMul of an [N, width] value by a
    2-D initializer whose inner dimension is not that width), else None; ``widths`` learns the width of
    ``n``'s output where it is known (a Gemm / MatMul by a 2-D initializer, an elementwise operator of one
    input). Nothing is said where a shape is not known for sure."""
    if n.domain not in ("", "ai.onnx") or not n.outputs or not n.inputs:
        return None
    a = n.inputs[0]
    if n.op_type in _SAME_SHAPE and len(n.inputs) == 1 and a in widths:
        widths[n.outputs[0]] = widths[a]
        return None
    if n.op_type not in ("Gemm", "MatMul") or len(n.inputs) < 2 or a not in widths or n.ints.get("transA"):
        return None
    b = dims.get(n.inputs[1])
    if b is None or len(b) != 2:
        return None
    inner, out = (b[1], b[0]) if n.op_type == "Gemm" and n.ints.get("transB") else b
    if inner != widths[a]:
        return (f"multiplies {a!r}, {widths[a]} columns wide, by {n.inputs[1]!r} of shape {list(b)}"
                f"{' transposed' if n.op_type == 'Gemm' and n.ints.get('transB') else ''}, whose inner dimension "
                f"is {inner}")
    widths[n.outputs[0]] = out
    return None


def _initializer_name(buf, span) -> str | None:
    for f, wt, v in _fields(buf, *span):
        if f == 8 and wt == 2:
            return _string(buf, v)
    return None


def _initializer_type(buf, span) -> int | None:
    return next((v for f, wt, v in _fields(buf, *span) if f == 2 and wt == 0), None)


def _initializer_dims(buf, span) -> tuple[int, ...]:
    """A TensorProto's dims (field 1: repeated int64, packed or not)."""
    dims = []
    for f, wt, v in _fields(buf, *span):
        if f == 1 and wt == 0:
            dims.append(v)
        elif f == 1 and wt == 2:
            pos, end = v
            while pos < end:
                x, pos = _varint(buf, pos, end)
                dims.append(x)
    return tuple(dims)


def _pair(buf, span, key: int, value: int) -> tuple[str, int | str]:
    """(string field ``key``, field ``value``: a varint or a string) of a small message: an
    OperatorSetIdProto (domain = 1, version = 2) or a FunctionProto (domain = 10, name = 1)."""
    k, v = "", 0
    for f, wt, x in _fields(buf, *span):
        if f == key and wt == 2:
            k = _string(buf, x)
        elif f == value:
            v = _string(buf, x) if wt == 2 else x
    return k, v


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
    opsets, functions = {}, set()
    for f, wt, v in _fields(buf, 0, size):
        if f == 8 and wt == 2:
            dom, ver = _pair(buf, v, 1, 2)
            opsets["" if dom == "ai.onnx" else dom] = ver
        elif f == 25 and wt == 2:
            functions.add(_pair(buf, v, 10, 1))
        elif f == 1:
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
    sparse = False
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
        elif f == 15:                                  # a sparse initializer: which names it defines is not read
            sparse = True
    types = {i.name: i.elem_type for i in inputs}
    types.update((_initializer_name(buf, sp) or "", _initializer_type(buf, sp)) for sp in init_spans)
    if init_spans and len(inputs) > 1:                 # old-style models list initializers as inputs
        names = {_initializer_name(buf, s) for s in init_spans}
        inputs = [i for i in inputs if i.name not in names]
    bad = next((sp for sp in init_spans if not _initializer_finite(buf, sp)), None)
    external = [(_initializer_name(buf, sp) or "?", loc) for sp in init_spans
                if (loc := _external_location(buf, sp)) is not None]
    return OnnxSignature(ir_version=ir_version, inputs=inputs, outputs=outputs, nodes=nodes,
                         nonfinite=None if bad is None else (_initializer_name(buf, bad) or "?"), external=external,
                         types=None if sparse else types, opsets=opsets, functions=functions,
                         dims={_initializer_name(buf, sp) or "": _initializer_dims(buf, sp) for sp in init_spans})


@filecache.per_run
def read_onnx_signature(path: str | os.PathLike) -> OnnxSignature:
    """The graph inputs (initializers excluded) and outputs of an ONNX file (read once per lint run:
    its checks each ask for it).

    Raises ModelLoadError when the file is missing or is not an ONNX protobuf.
    """
    p = pathlib.Path(path)
    require_file(p)
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


# TensorProto.DataType -> numpy dtype name, for the input types fairspec feeds (models.onnx_model)
_INPUT_DTYPES = {1: "float32", 11: "float64", 10: "float16"}
# the element types of the one-column inputs of a multi-input model (skl2onnx: one per column)
_COLUMN_DTYPES = {1: "float32", 11: "float64", 10: "float16", 7: "int64", 6: "int32", 9: "bool", 8: "object"}


def _fmt_shape(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def input_problem(sig: OnnxSignature, path) -> str | None:
    """The sentence for graph inputs fairspec cannot feed (none; one that is not [N, width] of float32,
    float64 or float16; several, not one column each of a number, boolean or string type): check's
    loader (models.onnx_model) and lint (models.peek) say it alike. None when they can be fed."""
    if not sig.inputs:
        return (f"ONNX model {path} has no graph inputs; fairspec needs one input of shape [N, width], or one input "
                f"of shape [N, 1] per column")
    if len(sig.inputs) > 1:
        for i in sig.inputs:
            if i.shape is not None and (len(i.shape) not in (1, 2) or (len(i.shape) == 2 and i.shape[1] not in (1, None))):
                return (f"ONNX model {path} has {len(sig.inputs)} graph inputs, and its input {i.name!r} has shape "
                        f"{_fmt_shape(i.shape)}; a model with several inputs needs one column per input, of shape [N, 1]")
            if i.elem_type is not None and i.elem_type not in _COLUMN_DTYPES:
                return (f"ONNX model {path} has {len(sig.inputs)} graph inputs, and its input {i.name!r} has element "
                        f"type {i.elem_type}; fairspec feeds numbers, booleans and strings")
        return None
    inp = sig.inputs[0]
    if inp.shape is not None and len(inp.shape) != 2:
        return (f"the input {inp.name!r} of ONNX model {path} has shape {_fmt_shape(inp.shape)}; fairspec needs an "
                f"input of shape [N, width]")
    if inp.shape is not None and isinstance(inp.shape[0], int) and inp.shape[0] > 1 \
            and not isinstance(inp.shape[1], int):      # [k, N]: rows fed as its columns would mix them
        return (f"the input {inp.name!r} of ONNX model {path} has shape {_fmt_shape(inp.shape)}: a fixed first "
                f"dimension and an open second one, as a features-first input [width, N] has; fairspec feeds "
                f"rows, [N, width]: export the model with the batch dimension first")
    if inp.shape is not None and inp.shape[1] == 0:
        return (f"the input {inp.name!r} of ONNX model {path} has shape {_fmt_shape(inp.shape)}: no column; "
                f"fairspec needs an input of shape [N, width], width at least 1")
    if inp.elem_type is not None and inp.elem_type not in _INPUT_DTYPES:
        return (f"the input {inp.name!r} of ONNX model {path} has element type {inp.elem_type}; fairspec feeds "
                f"float32 or float64 tensors")
    return None


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


# The ONNX operators fairspec.models.network.from_onnx reads (it raises UnsupportedModel for any other).
PL_ONNX_OPS = frozenset({"Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Relu", "Identity", "Dropout", "Flatten",
                         "Transpose", "Sigmoid", "Softmax", "Constant"})


def onnx_obstacle(sig: OnnxSignature, output) -> str | None:
    chosen = chosen_output(sig, output)
    if chosen is None:
        return None
    target = chosen.name
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


def onnx_class_labels(sig: OnnxSignature, columns: int | None) -> tuple | None:
    """The class labels an ai.onnx.ml classifier node records (skl2onnx writes them), when exactly
    one node does and it has ``columns`` of them (None: not known); else None."""
    found = [n.class_labels for n in sig.nodes if n.class_labels]
    if len(found) != 1 or (columns is not None and len(found[0]) != columns):
        return None
    return found[0]



# --- which graph output, and what it holds (lint's FS413 and the loader say the same) ---------------

_FLOAT_ELEM_TYPES = {1: "float", 10: "float16", 11: "double", 16: "bfloat16"}
_ELEM_NAMES = {2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string", 9: "bool",
               12: "uint32", 13: "uint64"}
# nodes that hand their input on with its values unchanged (for "which operator made this output")
_SAME_VALUES = frozenset({"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Dropout"})
#: an output made by one of these holds probabilities
PROB_OPS = frozenset({"Sigmoid", "Softmax"})
#: an output made by one of these (ai.onnx.ml, as skl2onnx writes scikit-learn regressors) is a regression's
REGRESSOR_OPS = frozenset({"LinearRegressor", "TreeEnsembleRegressor", "SVMRegressor"})


def chosen_output(sig: OnnxSignature, output) -> OnnxValueInfo | None:
    """The graph output ``output`` names (a name or a position), or the only one when it is None;
    None when there is no such output or the choice is ambiguous (see :func:`output_choice_problem`)."""
    outs = sig.outputs
    if output is None:
        return outs[0] if len(outs) == 1 else None
    if isinstance(output, int) and not isinstance(output, bool):
        return outs[output] if -len(outs) <= output < len(outs) else None
    return next((o for o in outs if o.name == output), None)


def output_choice_problem(sig: OnnxSignature, output) -> tuple[str, str] | None:
    """(message, hint) when the declaration does not fix one graph output holding scores: several
    outputs and no ``output = ...`` (skl2onnx writes a classifier's ``label`` first, then its
    ``probabilities``), or a chosen output of class labels (integers, strings) or of maps. None when
    it does; an output named that the file lacks (or a position past its outputs) is a problem too."""
    outs = sig.outputs
    names = ", ".join(repr(o.name) for o in outs)
    scores = [o.name for o in outs if o.elem_type in _FLOAT_ELEM_TYPES and not o.not_tensor]
    suggest = ("add output = " + " or ".join(f'"{n}"' for n in scores) + " to the model declaration" if scores
               else "add output = NAME to the model declaration")
    two = [o for o in outs if o.name in scores and o.shape is not None and len(o.shape) == 2 and o.shape[1] == 2]
    if len(scores) == 1 and two:                       # skl2onnx's probabilities: one column per class
        suggest = f'add output = "{scores[0]}", index = 1 to the model declaration (index: the positive class\'s column)'
    if output is None and len(outs) > 1:
        return (f"the model file has {len(outs)} outputs ({names}) and the declaration does not say which one "
                f"the decision reads", suggest)
    o = chosen_output(sig, output)
    if o is None and output is not None and outs:   # the loader refuses it in the same words
        if isinstance(output, int) and not isinstance(output, bool):
            return (f"the model file has {len(outs)} output(s) ({names}), so output position {output} is out of range",
                    f"outputs are counted from 0: output = 0 .. {len(outs) - 1}, or name one")
        if isinstance(output, str):
            import difflib

            close = difflib.get_close_matches(output, [x.name for x in outs], n=1, cutoff=0.6)
            return (f"the model file has no output named {output!r}; its outputs are {names}",
                    f'the closest is output = "{close[0]}"' if close else
                    "name one of them: " + ", ".join(f'output = "{x.name}"' for x in outs[:4]))
    if o is None:
        return None
    if o.not_tensor:
        return (f"output {o.name!r} is a sequence or a map (scikit-learn's ZipMap), not a tensor of scores",
                suggest if scores else "export the model with zipmap = False (skl2onnx options)")
    if o.shape is not None and len(o.shape) > 2:       # lint passed it; the loader refused it, as it does now here
        return (f"output {o.name!r} has {len(o.shape)} dimensions; fairspec reads outputs of shape [N] or [N, K]",
                "export the model's scores as an output of shape [N] or [N, K]")
    if o.elem_type is not None and o.elem_type not in _FLOAT_ELEM_TYPES:
        kind = _ELEM_NAMES.get(o.elem_type, f"type {o.elem_type}")
        return (f"output {o.name!r} holds {kind} values (class labels), not scores: the decision rule and any "
                f"probability are read from an output of scores",
                suggest if scores else "export the model's scores (logits or probabilities) as a graph output")
    return None


def output_producer(sig: OnnxSignature, name: str) -> str | None:
    """The operator that computes graph value ``name``, looking through nodes that pass their values
    on unchanged (Identity, Reshape, ...); None for a graph input, an initializer or an unknown name."""
    producer = {o: n for n in sig.nodes for o in n.outputs}
    seen = set()
    while name in producer and name not in seen:
        seen.add(name)
        n = producer[name]
        if n.op_type not in _SAME_VALUES or not n.inputs:
            return n.op_type
        name = n.inputs[0]
    return None


def guessed_score_kind(sig: OnnxSignature, out: OnnxValueInfo) -> str:
    """What an output holds when the declaration does not say ``score = ...``: the operator that
    computes it decides where it tells (Sigmoid or Softmax: probabilities; an ai.onnx.ml regressor:
    a regression's value), else the name (``prob`` in it: probabilities), else logits."""
    op = output_producer(sig, out.name)
    if op in PROB_OPS:
        return "prob"
    if op in REGRESSOR_OPS:
        return "value"
    return "prob" if "prob" in out.name.lower() else "logit"
