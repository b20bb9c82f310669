"""Tree model files checked before a library reads them: XGBoost (JSON, UBJSON) and LightGBM (text).

XGBoost and LightGBM trust their model files: a tree whose child points back at its parent, at
itself or past the end, a split on a feature beyond the input width, a ``num_leaves`` of 10^8 or
a ``tree_sizes`` header that runs past the end of the file crash the process inside the library
(SIGSEGV, abort) with nothing printed.  :func:`check_xgboost` and :func:`check_lightgbm` read the
file here, in Python and without the library, and raise :class:`~fairspec.models.base.ModelLoadError`
(one sentence naming the file and what is wrong) unless every tree is a tree: each child index in
range, every node reached once from the root (no cycle, no shared node), every split on a feature
below the declared width, every threshold a number, every leaf value finite, the arrays as long
as the tree says.  They return the model's input width.  Lint (through
:func:`fairspec.models.peek.peek_input_width`) and the loaders (:mod:`fairspec.models.boosted`) both
call them, so a file lint passes is one the library can read, and one it refuses never reaches it.
Plain Python (no numpy), as the rest of what lint reads.
"""

from __future__ import annotations

import json
import math
import pathlib
import struct

from fairspec import filecache

from .base import ModelLoadError

MAX_FEATURES = 1 << 24       # a wider input is no model fairspec can encode; also bounds every allocation
_MAX_DEPTH = 64              # UBJSON nesting (XGBoost's documents are 6 deep)


def _bad(path, what: str) -> ModelLoadError:
    return ModelLoadError(f"{path} is not a valid {what}", path)


# ------------------------------------------------------------------ UBJSON (XGBoost's binary format)

_UBJ_NUM = {b"i": "b", b"U": "B", b"I": "h", b"l": "i", b"L": "q", b"d": "f", b"D": "d"}  # big-endian in the file


class _Ubj:
    """A bounded UBJSON reader (the subset XGBoost writes: objects, arrays, typed arrays, numbers, strings)."""

    def __init__(self, buf: bytes):
        self.buf, self.pos = buf, 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise ValueError("truncated")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def _count(self) -> int:
        t = self._take(1)
        if t not in _UBJ_NUM or t in (b"d", b"D"):
            raise ValueError("bad length")
        code = ">" + _UBJ_NUM[t]
        (n,) = struct.unpack(code, self._take(struct.calcsize(code)))
        if n < 0 or n > len(self.buf):
            raise ValueError("bad length")
        return n

    def value(self, t: bytes | None = None, depth: int = 0):
        if depth > _MAX_DEPTH:
            raise ValueError("nested too deeply")
        t = t or self._take(1)
        while t == b"N":  # no-op
            t = self._take(1)
        if t in _UBJ_NUM:
            code = ">" + _UBJ_NUM[t]
            return struct.unpack(code, self._take(struct.calcsize(code)))[0]
        if t == b"S":
            return self._take(self._count()).decode("utf-8")
        if t == b"C":
            return self._take(1).decode("latin-1")
        if t in (b"T", b"F"):
            return t == b"T"
        if t == b"Z":
            return None
        if t == b"H":
            return float(self._take(self._count()).decode("ascii"))
        if t in (b"[", b"{"):
            return self._container(t == b"{", depth)
        raise ValueError(f"unknown marker {t!r}")

    def _container(self, is_obj: bool, depth: int):
        typ = count = None
        if self.buf[self.pos:self.pos + 1] == b"$":
            self.pos += 1
            typ = self._take(1)
            if self._take(1) != b"#":
                raise ValueError("typed container without a count")
            count = self._count()
        elif self.buf[self.pos:self.pos + 1] == b"#":
            self.pos += 1
            count = self._count()
        if not is_obj and typ in _UBJ_NUM:  # a typed numeric array: one read
            code = f">{count}{_UBJ_NUM[typ]}"
            return list(struct.unpack(code, self._take(struct.calcsize(code))))
        out: dict | list = {} if is_obj else []
        i = 0
        while True:
            if count is None:
                if self.buf[self.pos:self.pos + 1] == (b"}" if is_obj else b"]"):
                    self.pos += 1
                    return out
            elif i == count:
                return out
            if is_obj:
                key = self._take(self._count()).decode("utf-8")
                out[key] = self.value(typ, depth + 1)
            else:
                out.append(self.value(typ, depth + 1))
            i += 1


def read_xgboost(path) -> dict:
    """The XGBoost model document (JSON or UBJSON), or ModelLoadError.

    Within one lint run (:func:`fairspec.filecache.one_run`) the file is read and parsed once, and
    its document -- or its error -- serves every look-up lint makes: the tree check, the input names,
    the categories, the rounds, the objective. The document is shared: callers read it, never change it."""
    doc, error = _parse_xgboost(pathlib.Path(path))
    if error is not None:
        raise ModelLoadError(error, path)
    return doc


@filecache.per_run
def _parse_xgboost(p: pathlib.Path) -> tuple[dict | None, str | None]:
    """(the document, None) or (None, the sentence of the ModelLoadError): an error is a value here, so
    that a run keeps it too (per_run keeps no raised error) and a bad file is not parsed once per look-up."""
    try:
        buf = p.read_bytes()
    except OSError as e:
        from fairspec.files import os_error

        return None, os_error(p, e)
    try:
        if buf[:1] == b"{" and buf[1:2] not in (b"L", b"l", b"i", b"U", b"I", b"$", b"#", b"}"):
            doc = json.loads(buf.decode("utf-8"))
        else:
            r = _Ubj(buf)
            doc = r.value()
    except (ValueError, UnicodeDecodeError, RecursionError, struct.error, OverflowError) as e:
        return None, _bad(p, f"XGBoost model file (JSON or UBJSON): {str(e)[:120]}").message
    if not isinstance(doc, dict):
        return None, _bad(p, "XGBoost model file (the document is not an object)").message
    return doc, None


# ------------------------------------------------------------------ XGBoost

def _get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _int(v, default=None):
    try:
        if isinstance(v, str):
            v = v.strip()
        f = float(v)
    except (TypeError, ValueError):
        return default
    return int(f) if math.isfinite(f) and f == int(f) else default


def _array(v, n: int | None, kind, where: str, path) -> list:
    """A list of numbers (``kind`` int: whole numbers; float; None: anything) of length ``n``."""
    if not isinstance(v, list):
        raise _bad(path, f"XGBoost model file: {where} is missing")
    if n is not None and len(v) != n:
        raise _bad(path, f"XGBoost model file: {where} has {len(v)} entries, the tree has {n} nodes")
    if kind is None:
        return v
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise _bad(path, f"XGBoost model file: {where} holds something other than numbers")
    if kind is int:
        if not all(isinstance(x, int) or (math.isfinite(x) and x == int(x)) for x in v):
            raise _bad(path, f"XGBoost model file: {where} holds something other than whole numbers")
        return [int(x) for x in v]
    return [float(x) for x in v]


def _check_tree_shape(left, right, n: int, path, what: str) -> list[int]:
    """The nodes reached from the root (node 0), each exactly once; raises on a child out of range,
    a node that is its own child, a cycle or a node with two parents."""
    seen = [False] * n
    order, stack = [], [0]
    while stack:
        i = stack.pop()
        if seen[i]:
            raise _bad(path, f"{what}: node {i} is reached twice (a cycle or a shared node)")
        seen[i] = True
        order.append(i)
        a, b = int(left[i]), int(right[i])
        if a == -1 and b == -1:  # a leaf is exactly -1, -1 (the library tests == -1)
            continue
        for c in (a, b):
            if c < 0 or c >= n:
                raise _bad(path, f"{what}: node {i} has child {c}, outside the tree's {n} nodes")
            if c == i:
                raise _bad(path, f"{what}: node {i} is its own child")
        if a == b:
            raise _bad(path, f"{what}: node {i} has the same node {a} as both children")
        stack += [b, a]
    return order


def check_xgboost(path) -> int | None:
    """Validate an XGBoost model file's trees (module docstring); its input width (None when it does not say)."""
    p = pathlib.Path(path)
    doc = read_xgboost(p)
    learner = doc.get("learner")
    if not isinstance(learner, dict):
        raise _bad(p, "XGBoost model file (no 'learner')")
    width = _int(_get(learner, "learner_model_param", "num_feature"), -1)
    if width < 0 or width > MAX_FEATURES:
        raise _bad(p, f"XGBoost model file: num_feature must be a whole number in [0, {MAX_FEATURES}]")
    # what the library refuses only when it loads the file or is first fed (lint passed them, check failed)
    version = doc.get("version")
    if version is not None and not (isinstance(version, list) and len(version) == 3 and
                                    all(isinstance(v, int) and not isinstance(v, bool) for v in version)):
        raise _bad(p, "XGBoost model file: its version is not [major, minor, patch] (three whole numbers)")
    names = learner.get("feature_names")
    if names and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise _bad(p, "XGBoost model file: its feature_names is not a list of names")
    if names and width and len(names) != width:
        raise _bad(p, f"XGBoost model file: it records {len(names)} feature_names for its {width} features")
    base = _get(learner, "learner_model_param", "base_score")
    if base is not None:
        try:
            vals = [float(x) for x in str(base).strip("[] ").replace(",", " ").split()]
        except ValueError:
            vals = [math.nan]
        if not vals or not all(math.isfinite(v) for v in vals):
            raise ModelLoadError(f"{p} is not a usable XGBoost model: its base_score {base!r} is not a finite number", p)
    gb = learner.get("gradient_booster")
    name = _get(gb, "name")
    if name == "dart":
        gb = _get(gb, "gbtree")
    elif name == "gblinear":
        # the library reads the weights without looking: none (a gbtree's model under the name gblinear)
        # crashed it (a segmentation fault), too few or too many read past them (an output of garbage)
        w = _array(_get(gb, "model", "weights"), None, float, "the list of linear weights", p)
        groups = max(1, _int(_get(learner, "learner_model_param", "num_class"), 0) or 0,
                     _int(_get(learner, "learner_model_param", "num_target"), 1) or 1)
        if len(w) != (width + 1) * groups:
            raise _bad(p, f"XGBoost model file: the linear booster has {len(w)} weights; {width} features and "
                          f"{groups} output(s) need {(width + 1) * groups}")
        if not all(map(math.isfinite, w)):
            raise ModelLoadError(f"{p} is not a usable XGBoost model: its weights are not all finite (NaN or inf)", p)
        return width or None
    elif name != "gbtree":
        raise _bad(p, f"XGBoost model file: unknown booster {name!r}")
    model = _get(gb, "model")
    trees = _get(model, "trees")
    if not isinstance(trees, list):
        raise _bad(p, "XGBoost model file: the booster has no list of trees")
    declared = _int(_get(model, "gbtree_model_param", "num_trees"))
    if declared is not None and declared != len(trees):
        raise _bad(p, f"XGBoost model file: it declares {declared} trees and holds {len(trees)}")
    info = _get(model, "tree_info")
    if info is not None and len(info) != len(trees):
        raise _bad(p, f"XGBoost model file: tree_info has {len(info)} entries for {len(trees)} trees")
    indptr = _get(model, "iteration_indptr")
    if indptr is not None:
        ip = _array(indptr, None, int, "iteration_indptr", p)
        if ip and (ip[0] != 0 or any(b < a for a, b in zip(ip, ip[1:])) or ip[-1] != len(trees)):
            raise _bad(p, "XGBoost model file: iteration_indptr does not count its trees")
    for t, tree in enumerate(trees):
        what = f"XGBoost model file: tree {t}"
        if not isinstance(tree, dict):
            raise _bad(p, f"{what} is not an object")
        n = _int(_get(tree, "tree_param", "num_nodes"), -1)
        if n < 1:
            raise _bad(p, f"{what} has no nodes")
        leaf_vec = _int(_get(tree, "tree_param", "size_leaf_vector"), 1)
        if leaf_vec not in (0, 1):
            raise ModelLoadError(f"{p} holds a multi-target XGBoost tree (tree {t}: a vector leaf, "
                                 "multi_strategy='multi_output_tree'); fairspec reads trees of one output each "
                                 "(train with multi_strategy='one_output_per_tree', the default)", p)
        left = _array(tree.get("left_children"), n, int, f"tree {t}'s left_children", p)
        right = _array(tree.get("right_children"), n, int, f"tree {t}'s right_children", p)
        feat = _array(tree.get("split_indices"), n, int, f"tree {t}'s split_indices", p)
        cond = _array(tree.get("split_conditions"), n, float, f"tree {t}'s split_conditions", p)
        dleft = _array(tree.get("default_left"), n, int, f"tree {t}'s default_left", p)
        stype = tree.get("split_type")
        stype = [0] * n if stype is None else _array(stype, n, int, f"tree {t}'s split_type", p)
        if any(x not in (0, 1) for x in dleft) or any(x not in (0, 1) for x in stype):
            raise _bad(p, f"{what}: default_left and split_type hold 0 or 1")
        if "base_weights" in tree:
            _array(tree["base_weights"], None, float, f"tree {t}'s base_weights", p)
        order = _check_tree_shape(left, right, n, p, what)
        inner = [i for i in order if left[i] >= 0]
        leaves = [i for i in order if left[i] < 0]
        if "parents" in tree:  # the library follows parents too: each must be the node's real parent
            parents = _array(tree["parents"], n, int, f"tree {t}'s parents", p)
            if parents[0] not in (-1, 2147483647) or any(parents[c] != i for i in inner for c in (left[i], right[i])) \
                    or any(not (-1 <= x < n or x == 2147483647) for x in parents):
                raise _bad(p, f"{what}: its parents array does not match its children")
        for i in inner:
            if feat[i] < 0 or (width and feat[i] >= width) or feat[i] >= MAX_FEATURES:
                raise _bad(p, f"{what} splits on feature {feat[i]}, beyond the model's {width} inputs")
            if stype[i] == 0 and math.isnan(cond[i]):
                raise _bad(p, f"{what} has a split threshold that is not a number (NaN)")
        if not all(math.isfinite(cond[i]) for i in leaves):
            raise ModelLoadError(f"{p} is not a usable XGBoost model: a leaf of tree {t} holds a value that is not "
                                 "finite (NaN or inf)", p)
        categorical = [i for i in inner if stype[i] != 0]
        if categorical:
            _check_categories(tree, categorical, p, what)
    return width or None


def _check_categories(tree, nodes, path, what) -> None:
    cats = _array(tree.get("categories", []), None, float, "categories", path)
    cnodes = _array(tree.get("categories_nodes", []), None, int, "categories_nodes", path)
    seg = _array(tree.get("categories_segments", []), len(cnodes), int, "categories_segments", path)
    size = _array(tree.get("categories_sizes", []), len(cnodes), int, "categories_sizes", path)
    if any(a < 0 or b < 0 or a + b > len(cats) for a, b in zip(seg, size)):
        raise _bad(path, f"{what}: a categorical split's categories lie outside the list")
    if not all(math.isfinite(c) and 0 <= c < MAX_FEATURES for c in cats):
        raise _bad(path, f"{what}: a category is not a small whole number")
    if not set(nodes) <= set(cnodes):
        raise _bad(path, f"{what}: a categorical split has no categories")


# ------------------------------------------------------------------ LightGBM

def _floats(text: str, n: int, key: str, path, what: str) -> list[float]:
    parts = text.split()
    if len(parts) != n:
        raise _bad(path, f"LightGBM model file: {what}'s {key} has {len(parts)} entries, expected {n}")
    try:
        return [float(x) for x in parts]
    except ValueError:
        raise _bad(path, f"LightGBM model file: {what}'s {key} holds something other than numbers") from None


def _ints(text: str, n: int, key: str, path, what: str) -> list[int]:
    a = _floats(text, n, key, path, what)
    if not all(math.isfinite(x) and x == int(x) and abs(x) <= 2 ** 53 for x in a):
        raise _bad(path, f"LightGBM model file: {what}'s {key} holds something other than whole numbers")
    return [int(x) for x in a]


def check_lightgbm(path) -> int | None:
    """Validate a LightGBM text model file's trees (module docstring); its input width."""
    p = pathlib.Path(path)
    try:
        buf = p.read_bytes()
    except OSError as e:
        from fairspec.files import os_error

        raise ModelLoadError(os_error(p, e), p) from None
    if buf[:5] != b"tree\n" and buf[:6] != b"tree\r\n":
        raise _bad(p, "LightGBM text model file (it does not start with 'tree')")
    try:
        text = buf.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(p, "LightGBM text model file (not UTF-8 text)") from None
    first = text.find("\nTree=")
    head = text[:first if first >= 0 else len(text)]
    hdr = dict(line.split("=", 1) for line in head.splitlines() if "=" in line)
    mfi = _int(hdr.get("max_feature_idx"), None)
    if mfi is None or mfi < 0 or mfi >= MAX_FEATURES:
        raise _bad(p, f"LightGBM model file: max_feature_idx must be a whole number in [0, {MAX_FEATURES})")
    width = mfi + 1
    for key in ("num_class", "num_tree_per_iteration"):
        v = _int(hdr.get(key, "1"), -1)
        if v < 1 or v > 1 << 16:
            raise _bad(p, f"LightGBM model file: {key} must be a positive whole number")
    if "end of trees" not in text:
        raise _bad(p, "LightGBM model file: it is truncated (no 'end of trees')")
    body = text[first + 1:text.index("end of trees")] if first >= 0 else ""
    blocks = [b for b in body.split("\nTree=")]
    if blocks and blocks[0].startswith("Tree="):
        blocks[0] = blocks[0][len("Tree="):]
    blocks = [b for b in blocks if b.strip()]
    if "tree_sizes" in hdr:
        sizes = hdr["tree_sizes"].split()
        if len(sizes) != len(blocks) or not all(s.isdigit() for s in sizes):
            raise _bad(p, f"LightGBM model file: tree_sizes lists {len(sizes)} trees and the file holds {len(blocks)}")
        start, raw = first + 1, buf
        pos = len(text[:start].encode("utf-8"))
        for i, s in enumerate(sizes):
            if raw[pos:pos + 5] != b"Tree=":
                raise _bad(p, f"LightGBM model file: tree_sizes does not match tree {i}'s place in the file")
            pos += int(s)
            if pos > len(raw):
                raise _bad(p, "LightGBM model file: tree_sizes runs past the end of the file")
    for t, block in enumerate(blocks):
        what = f"tree {t}"
        kv = {}
        for line in block.splitlines()[1:]:
            if "=" in line:
                k, v = line.split("=", 1)
                kv[k.strip()] = v.strip()
        n_leaves = _int(kv.get("num_leaves"), -1)
        if n_leaves < 1:
            raise _bad(p, f"LightGBM model file: {what} has no num_leaves")
        leaf = _floats(kv.get("leaf_value", ""), n_leaves, "leaf_value", p, what)
        if not all(map(math.isfinite, leaf)):
            raise ModelLoadError(f"{p} is not a usable LightGBM model: a leaf of {what} holds a value that is not "
                                 "finite (NaN or inf)", p)
        if _int(kv.get("is_linear", "0"), 0):
            raise ModelLoadError(f"{p} holds a linear-leaf LightGBM tree ({what}); fairspec reads constant leaves", p)
        if n_leaves == 1:
            if _int(kv.get("num_cat", "0"), -1) != 0:
                raise _bad(p, f"LightGBM model file: {what} is one leaf and declares categorical splits")
            continue
        m = n_leaves - 1
        feat = _ints(kv.get("split_feature", ""), m, "split_feature", p, what)
        thr = _floats(kv.get("threshold", ""), m, "threshold", p, what)
        dec = _ints(kv.get("decision_type", ""), m, "decision_type", p, what)
        left = _ints(kv.get("left_child", ""), m, "left_child", p, what)
        right = _ints(kv.get("right_child", ""), m, "right_child", p, what)
        bad = next((f for f in feat if f < 0 or f >= width), None)
        if bad is not None:
            raise _bad(p, f"LightGBM model file: {what} splits on feature {bad}, beyond the model's {width} inputs")
        if any(map(math.isnan, thr)):
            raise _bad(p, f"LightGBM model file: {what} has a split threshold that is not a number (NaN)")
        # internal nodes 0..m-1 are >= 0; leaf j is written ~j = -(j + 1)
        if any(c >= m or c == 0 or c < -n_leaves for c in left + right):
            raise _bad(p, f"LightGBM model file: {what} has a child outside its {m} nodes and {n_leaves} leaves")
        seen_in, seen_leaf, stack = [False] * m, [False] * n_leaves, [0]
        while stack:
            i = stack.pop()
            if seen_in[i]:
                raise _bad(p, f"LightGBM model file: {what}'s node {i} is reached twice (a cycle or a shared node)")
            seen_in[i] = True
            for c in (left[i], right[i]):
                if c >= 0:
                    stack.append(c)
                elif seen_leaf[~c]:
                    raise _bad(p, f"LightGBM model file: {what}'s leaf {~c} is reached twice")
                else:
                    seen_leaf[~c] = True
        if not (all(seen_in) and all(seen_leaf)):
            raise _bad(p, f"LightGBM model file: {what} has nodes or leaves its root never reaches")
        if any(x < 0 or x > 15 for x in dec):
            raise _bad(p, f"LightGBM model file: {what}'s decision_type holds a value other than 0 to 15")
        cat = [i for i in range(m) if dec[i] & 1]
        n_cat = _int(kv.get("num_cat", "0"), -1)
        if n_cat < 0 or n_cat > m or (cat and n_cat < 1):
            raise _bad(p, f"LightGBM model file: {what}'s num_cat does not count its categorical splits")
        if n_cat:
            bounds = _ints(kv.get("cat_boundaries", ""), n_cat + 1, "cat_boundaries", p, what)
            words = kv.get("cat_threshold", "").split()
            if (any(not (0 <= thr[i] < n_cat and thr[i] == int(thr[i])) for i in cat) or bounds[0] != 0
                    or any(b < a for a, b in zip(bounds, bounds[1:])) or bounds[-1] != len(words)
                    or not all(w.isdigit() for w in words)):
                raise _bad(p, f"LightGBM model file: {what}'s categorical splits point outside their lists")
    return width


# The rounds of an XGBoost model trained with early stopping (issue s18/h3-1): the file records
# ``best_iteration`` in the learner's attributes and keeps every round; XGBClassifier.predict (in
# memory or after load_model) uses rounds 0 .. best_iteration, Booster.predict every round. Which one
# "the model" is, the file does not say: the declaration does (``rounds = best | all``).
ROUNDS = ("best", "all")


def xgboost_rounds(p: pathlib.Path) -> tuple[int | None, int | None]:
    """(best_iteration, number of boosting rounds) an XGBoost model file records, read without the
    library; (None, None) when it records no best iteration, its booster is gblinear (whose
    predict ignores it) or the file cannot be read (the loader gives the sentence)."""
    try:
        learner = read_xgboost(p).get("learner", {})
        best = _int(_get(learner, "attributes", "best_iteration"))
        gb = _get(learner, "gradient_booster")
        if best is None or _get(gb, "name") == "gblinear":
            return None, None
        if _get(gb, "name") == "dart":
            gb = _get(gb, "gbtree")
        model = _get(gb, "model")
        indptr = _get(model, "iteration_indptr")
        if isinstance(indptr, list) and indptr:
            return best, len(indptr) - 1
        trees = _get(model, "trees")
        info = _get(model, "tree_info") or [0]
        per = max(1, _int(_get(model, "gbtree_model_param", "num_parallel_tree"), 1) or 1) * (max(info) + 1)
        return best, (len(trees) // per if isinstance(trees, list) else None)
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None, None


def rounds_ambiguous(best: int | None, rounds: int | None) -> bool:
    """Does a recorded best iteration leave rounds out (so that the wrapper's predict and the
    booster's differ)? An unknown count is taken as yes."""
    return best is not None and best >= 0 and (rounds is None or best + 1 < rounds)


def rounds_message(where: str, best: int, rounds: int | None) -> str:
    """The one sentence of FS425 / the loader's refusal."""
    of = f" of its {rounds} boosting rounds" if rounds is not None else ""
    return (f"{where} records best_iteration {best}{of} (early stopping): XGBClassifier.predict uses rounds 0 .. "
            f"{best}, Booster.predict every round, and nothing says which one is the model")


ROUNDS_HINT = ("add rounds = best to the model declaration for the rounds XGBClassifier.predict uses (0 .. "
               "best_iteration), or rounds = all for every round (Booster.predict)")
