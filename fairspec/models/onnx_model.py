"""ONNX models, evaluated with onnxruntime; replayed with onnx's reference evaluator."""

from __future__ import annotations

import io
import sys
import pathlib

from .base import LoadedModel, ModelLoadError, check_score_kind, readout_for, require_finite, short_error
from .peek_onnx import (_COLUMN_DTYPES, _INPUT_DTYPES, OnnxSignature, graph_problem, guessed_score_kind,
                        input_problem, missing_external_data, output_choice_problem, read_onnx_signature)
_ORT_INPUT_DTYPES = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16"}


class OnnxModel(LoadedModel):
    def __init__(self, path: pathlib.Path, *, output: str | int | None = None,
                 index: int | None = None, score_kind: str | None = None):
        kind = check_score_kind(score_kind, path)
        sig = read_onnx_signature(path)                # missing file / not ONNX, cheaply and clearly
        self._sig = sig
        self.multi = len(sig.inputs) > 1               # one graph input per column (skl2onnx), fed by name
        self._binding = None
        if (problem := input_problem(sig, path)) is not None:    # lint says the same (models.peek)
            raise ModelLoadError(problem, path)
        if not sig.outputs:
            raise ModelLoadError(f"ONNX model {path} declares no graph outputs", path)

        out_names = [o.name for o in sig.outputs]
        available = ", ".join(repr(n) for n in out_names)
        if output is None:
            pos = 0
        elif isinstance(output, bool):
            raise ModelLoadError(f"the output {output!r} chosen for ONNX model {path} is neither a name nor a position", path)
        elif isinstance(output, int):
            if not -len(out_names) <= output < len(out_names):
                raise ModelLoadError(
                    f"ONNX model {path} has {len(out_names)} output(s) ({available}), so output position {output} is out of range",
                    path,
                )
            pos = output % len(out_names)
        elif isinstance(output, str):
            if output not in out_names:
                raise ModelLoadError(
                    f"ONNX model {path} has no output named {output!r}; its outputs are {available}", path
                )
            pos = out_names.index(output)
        else:
            raise ModelLoadError(f"the output {output!r} chosen for ONNX model {path} is neither a name nor a position", path)
        out = sig.outputs[pos]
        self.output_name = out.name
        problem = output_choice_problem(sig, output)
        if problem is not None:                        # several outputs, none named; labels, not scores
            raise ModelLoadError(f"ONNX model {path}: {problem[0]}", path, code="FS413", hint=problem[1])

        # The column and the decision rule: fairspec.models.readout decides, from the output's shape.
        oshape = out.shape
        if oshape is not None and len(oshape) > 2:
            raise ModelLoadError(
                f"output {out.name!r} of ONNX model {path} has {len(oshape)} dimensions; fairspec reads outputs of shape [N] or [N, K]",
                path,
            )
        columns = None
        if oshape is not None and len(oshape) == 1:
            columns = 1
        elif oshape is not None and len(oshape) == 2 and isinstance(oshape[1], int) and oshape[1] > 0:
            columns = oshape[1]
        if kind is None:                               # the operator that computes it, else its name
            kind = guessed_score_kind(sig, out)
        self._what = f"output {out.name!r} of ONNX model {path}"
        from .peek_onnx import onnx_class_labels

        readout = readout_for(path, columns, index, kind, self._what, classes=onnx_class_labels(sig, columns))
        self.index = readout.index

        inp = sig.inputs[0]
        self.input_name = inp.name
        width = None
        self._batch: int | None = None             # a fixed batch size, when the graph pins one
        if self.multi:
            width = len(sig.inputs)
            self.input_names = tuple(i.name for i in sig.inputs)
            self._column_types = [_COLUMN_DTYPES.get(i.elem_type, "float32") for i in sig.inputs]
            self._input_shapes = [i.shape for i in sig.inputs]
        elif inp.shape is not None:                # [N, width]: input_problem said any other rank
            if isinstance(inp.shape[1], int) and inp.shape[1] > 0:
                width = inp.shape[1]
            if isinstance(inp.shape[0], int) and inp.shape[0] > 0:
                self._batch = inp.shape[0]
        self._dtype_name = _INPUT_DTYPES.get(inp.elem_type, "float32")

        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ModelLoadError(
                f"loading ONNX model {path} needs onnxruntime, which is not installed (pip install 'specfair[onnx]')",
                path,
            ) from exc
        try:
            opts = ort.SessionOptions()
            opts.log_severity_level = 4                # errors become our own sentence, not log lines
            # onnxruntime print()s "EP Error ... Falling back" on failures: keep it off our output.
            session = _quietly(lambda: ort.InferenceSession(str(path), sess_options=opts,
                                                            providers=["CPUExecutionProvider"]))
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
            # said as lint says it (peek), not as onnxruntime's C++ does
            missing = missing_external_data(sig, path) or graph_problem(sig, path)
            if missing is not None:
                raise ModelLoadError(missing, path) from None
            raise ModelLoadError(f"onnxruntime could not load ONNX model {path}: {_ort_reason(exc)}", path) from exc
        _require_finite_onnx(path)
        ort_inputs = session.get_inputs()
        if len(ort_inputs) != len(sig.inputs):
            names = ", ".join(repr(i.name) for i in ort_inputs)
            raise ModelLoadError(
                f"ONNX model {path} has {len(ort_inputs)} graph inputs ({names}) for onnxruntime; "
                f"fairspec needs one input of shape [N, width], or one input of shape [N, 1] per column",
                path,
            )
        if not self.multi:
            self._dtype_name = _ORT_INPUT_DTYPES.get(ort_inputs[0].type, self._dtype_name)
        self._session = session
        self._reference = None
        self._init_common(path, "onnx", width, kind, session, readout)
        if not self.multi and width is not None:     # rows scored apart (a features-first input, a batch Softmax)
            from .batching import rows_mixed

            def raw(X):
                return self._run_chunks(lambda xc: session.run([out.name], {inp.name: xc}), X)[0]

            tol = 0.1 if self._dtype_name == "float16" else 1e-3
            if (why := rows_mixed(raw, width, self._what, tol)) is not None:
                raise ModelLoadError(why, path)
        from .onnx_agreement import Agreement, label_sibling

        # FS439: the classifier node computing the declared output has a label output of its own; every
        # evaluation compares them (fairspec.runtime.label_agreement says what a property's showed)
        sibling = label_sibling(sig, out.name, columns) if readout.task != "regression" else None
        self.label_agreement = Agreement(sibling, readout) if sibling is not None else None

    # ---- several inputs, one per column ------------------------------------------
    def bind_encoding(self, enc, fs) -> None:
        """For a model with one graph input per column: which encoded column feeds which input
        (by the feature's data column, else its name: as fairspec.sema.pipelines matched them, so a
        feature named as one input but reading another's column feeds the latter), and how a
        category's code becomes the string or number the input takes."""
        if not self.multi or enc is None:
            return
        import numpy as np

        by_name = {n: j for j, n in enumerate(self.input_names)}
        from .base import loose_name as loose

        folds: dict = {}
        for j, n in enumerate(self.input_names):
            folds.setdefault(loose(n), []).append(j)
        by_case = {k: v[0] for k, v in folds.items() if len(v) == 1}   # as lint matched (sema.names): 'G' for g
        binding = []
        for c in enc.columns:
            f = fs.get(c.feature) if fs is not None else None
            col = getattr(f, "column", None)
            j = by_name.get(col, by_name.get(c.feature))
            if j is None:
                j = by_case.get(loose(col)) if col else None
                j = by_case.get(loose(c.feature)) if j is None else j
            if j is None or c.width != 1:
                raise ModelLoadError(
                    f"ONNX model {self.path} takes the inputs {', '.join(self.input_names)}, and the encoding feeds "
                    f"'{c.feature}', which is none of them", self.path)
            cats = None
            if c.kind == "code":
                # the input takes the category itself (its string, or its number): the encoded column holds
                # its code, looked up in the table (the code is no position: {A = 2, B = 1}, {0 = -1, 1 = 1})
                if len(set(c.codes)) != len(c.codes):
                    raise ModelLoadError(
                        f"ONNX model {self.path} takes each category of '{c.feature}' as itself, and the encode "
                        f"block's code table gives two of them one code: write the table with one code per "
                        f"category, or no table", self.path)
                order = sorted(range(len(c.categories)), key=lambda i: c.codes[i])
                cats = ([c.categories[i] for i in order], np.array([c.codes[i] for i in order], dtype=np.float64))
            binding.append((j, c.offset, cats))
        self._binding = binding
        self.input_width = enc.width            # inputs the graph never reads may go unfed (a filler value)

    def _feeds(self, X):
        import numpy as np

        n = X.shape[0]
        order = self._binding or [(j, j, None) for j in range(len(self.input_names))]
        feeds = {}
        for j in set(range(len(self.input_names))) - {j for j, _, _ in order}:
            # an input no feature feeds (sema allows it only when no node of the graph reads it)
            dt = self._column_types[j]
            arr = np.full(n, "", dtype=object) if dt == "object" else np.zeros(n, dtype=dt)
            shape = self._input_shapes[j]
            feeds[self.input_names[j]] = arr.reshape(n) if shape is not None and len(shape) == 1 else arr.reshape(n, 1)
        for j, offset, cats in order:
            v = X[:, offset]
            dt = self._column_types[j]
            if cats is not None:
                names, codes = cats if isinstance(cats, tuple) else (cats, np.arange(len(cats), dtype=np.float64))
                k = np.clip(np.searchsorted(codes, v), 0, len(codes) - 1)
                if not np.array_equal(codes[k], v):
                    raise ValueError(f"a value of input {self.input_names[j]} is no code of its table")
                v = np.asarray(names, dtype=object)[k]
                if dt == "bool":
                    v = np.asarray([str(x).lower() == "true" for x in v])
                elif dt != "object":
                    v = v.astype(np.float64)
            elif dt == "object":
                v = np.asarray([repr(float(x)) if not float(x).is_integer() else str(int(x)) for x in v], dtype=object)
            arr = np.asarray(v).astype(dt)
            shape = self._input_shapes[j]
            feeds[self.input_names[j]] = arr.reshape(n) if shape is not None and len(shape) == 1 else arr.reshape(n, 1)
        return feeds

    # ---- evaluation --------------------------------------------------------------
    @property
    def precision(self) -> str:
        """The input's element type: the graph computes in it (the operators read as a network take
        and give one type, and a graph with a Cast is not read as one)."""
        return self._dtype_name

    def _runtime_network(self, readout="raw"):
        from fairspec.models import network

        return network.from_onnx(self.path, output=self.output_name, readout=readout)

    def _piecewise_linear(self):
        from fairspec.models import network

        if self.multi:
            from .base import UnsupportedModel

            raise UnsupportedModel("ONNX", "inputs", "a model with one graph input per column (a converted pipeline) "
                                                     "is evaluated by onnxruntime, not read as a network")

        return network.from_onnx(self.path, output=self.output_name, readout=self.readout)

    def output_description(self) -> str:
        if self.index is None:
            return repr(self.output_name)
        if self.readout.score == "logit" and (self.readout.columns or 2) > 1:
            return f"{self.output_name!r}[{self.index}] - max of the other columns"
        return f"{self.output_name!r}[{self.index}]"

    def _select(self, y):
        return self._read(y, self._what)

    def _run_batched(self, run, X):
        """Feed X in the model's input dtype, in chunks when the graph pins the batch size."""
        return self._select(self._run_chunks(lambda xc: [run(xc)], X)[0])

    def _run_chunks(self, run, X) -> list:
        """The outputs ``run`` gives (a list) for X fed in the model's input dtype, in chunks when the
        graph pins the batch size (the last one padded with its last row)."""
        import numpy as np

        Xc = X.astype(self._dtype_name)
        b = self._batch
        if b is None or b == Xc.shape[0]:
            return run(Xc)
        parts = []
        for start in range(0, Xc.shape[0], b):
            chunk = Xc[start:start + b]
            m = chunk.shape[0]
            if m < b:
                chunk = np.concatenate([chunk, np.repeat(chunk[-1:], b - m, axis=0)])
            parts.append([np.asarray(y)[:m] for y in run(chunk)])
        return [np.concatenate(ys) for ys in zip(*parts)]

    def _score(self, X):
        agree = getattr(self, "label_agreement", None)
        names = [self.output_name] + ([agree.sibling.label] if agree is not None else [])
        alone = None
        if self.multi:
            feeds = self._feeds(X)
            ys = self._session.run(names, feeds)
            alone = lambda i: self._session.run(names, {k: v[i:i + 1] for k, v in feeds.items()})  # noqa: E731
        else:
            ys = self._run_chunks(lambda xc: self._session.run(names, {self.input_name: xc}), X)
            if self._batch in (None, 1):
                alone = lambda i: self._session.run(  # noqa: E731
                    names, {self.input_name: X[i:i + 1].astype(self._dtype_name)})
        if agree is not None:
            try:
                agree.observe(X, ys[0], ys[1], alone)
            except (ValueError, TypeError, IndexError, KeyError):   # FS439 is a warning: scoring never fails on it
                self.label_agreement = None
        return self._select(ys[0])

    def replay_reference(self, X):
        """The same output evaluated by onnx.reference.ReferenceEvaluator (independent of onnxruntime)."""
        import numpy as np

        X = self._check_input(X)
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        if self._reference is None:
            try:
                import onnx
                from onnx.reference import ReferenceEvaluator
            except ImportError as exc:
                raise ModelLoadError(
                    f"replaying ONNX model {self.path} needs the onnx package, which is not installed", self.path
                ) from exc
            try:
                self._reference = ReferenceEvaluator(onnx.load(str(self.path)))
            except Exception as exc:  # noqa: BLE001
                raise ModelLoadError(
                    f"the onnx reference evaluator could not load ONNX model {self.path}: {short_error(exc)}", self.path
                ) from exc
        ref = self._reference

        def run(xc):
            return ref.run([self.output_name], {self.input_name: xc})[0]

        return self._finish(self._guard(lambda x: self._run_batched(run, x), X), X.shape[0])

    def replay(self, X):
        if self.multi:                                 # onnx's reference evaluator lacks the ai.onnx.ml encoders
            return self.score(X)
        return self.replay_reference(X)

    @property
    def signature(self) -> OnnxSignature:
        return self._sig


def _quietly(make):
    """``make()`` with ``sys.stdout`` and ``sys.stderr`` on throw-away buffers. The streams are swapped
    inside the ``try``: ``contextlib.redirect_stderr`` swaps in its ``__enter__``, and a Ctrl-C or
    SIGTERM raised there (after the swap, before the ``with`` block) skips ``__exit__`` and leaves
    ``sys.stderr`` a buffer for the rest of the run -- the "interrupted" sentence then went nowhere."""
    saved = sys.stdout, sys.stderr
    try:
        sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
        return make()
    finally:
        sys.stdout, sys.stderr = saved


def _require_finite_onnx(path) -> None:
    """ModelLoadError naming the file when an initializer or a Constant of the graph is NaN or infinite
    (without the onnx package, the outputs are still checked on every evaluation)."""
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        return
    try:
        m = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - onnxruntime read it; the outputs are checked on every evaluation
        return

    def arrays():
        for init in m.graph.initializer:
            try:
                yield f"initializer {init.name!r}", numpy_helper.to_array(init)
            except Exception:  # noqa: BLE001 - external data: checked through the outputs
                continue
        for node in m.graph.node:
            if node.op_type == "Constant":
                for att in node.attribute:
                    if att.name == "value" and att.HasField("t"):
                        try:
                            yield f"constant {node.output[0]!r}", numpy_helper.to_array(att.t)
                        except Exception:  # noqa: BLE001
                            continue

    require_finite(arrays(), path)


def load_onnx(path: pathlib.Path, *, output=None, index=None, score_kind=None) -> OnnxModel:
    return OnnxModel(path, output=output, index=index, score_kind=score_kind)


def _ort_reason(exc: BaseException) -> str:
    """onnxruntime's message without its C++ source locations and signatures."""
    import re

    text = short_error(exc, limit=1000)
    text = re.sub(r"^\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*[A-Z_]+\s*:\s*", "", text)
    text = re.sub(r"^Load model from .*? failed:", "", text).strip()
    m = re.search(r"No opset import for domain|[Uu]nrecognized attribute|[Nn]o (?:kernel|schema) (?:registered )?for"
                  r"|Fatal error: [^ ]+ is not a registered function/op|is not a registered function/op", text)
    if m:
        op = re.search(r"(?:op_type|Op type|Fatal error:)\s*[:=]?\s*'?([A-Za-z0-9_.]+)", text)
        return f"it uses an operator onnxruntime does not know{f' ({op.group(1)})' if op else ''}"
    too_new = _too_new(text)
    if too_new:
        return too_new
    if "::" in text or "onnxruntime_src" in text or len(text) > 200:
        return "the graph is not a model onnxruntime can run (check it with onnx.checker)"
    return text


def _too_new(text: str) -> str | None:
    """The sentence for a file stamped newer than the installed onnxruntime reads: the file's IR version or
    opset and the newest onnxruntime supports, both as onnxruntime says them (never a table of ours)."""
    import re

    import onnxruntime

    fix = "re-export it with a lower opset (or an older exporter), or upgrade onnxruntime"
    m = re.search(r"Unsupported model IR version:\s*(\d+),\s*max supported IR version:\s*(\d+)", text)
    if m:
        return (f"its IR version is {m.group(1)}, newer than onnxruntime {onnxruntime.__version__} reads "
                f"(IR version {m.group(2)} at most): {fix}")
    m = re.search(r"Opset (\d+) is under development.*?support for domain (\S+?) is till opset (\d+)", text, re.S)
    if m:
        domain = m.group(2) or "ai.onnx"
        return (f"it imports opset {m.group(1)} of domain {domain}, newer than onnxruntime {onnxruntime.__version__} "
                f"supports (opset {m.group(3)} at most): {fix}")
    return None
