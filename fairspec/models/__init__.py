"""Model loaders: ONNX, torch, scikit-learn, XGBoost and LightGBM files behind one interface.

    m = load_model("onnx", "models/net.onnx", output="logit")
    m.score(X)    # float64 (n, width) -> float64 (n,)
    m.decide(X)   # int64 (n,): score > threshold
    m.replay(X)   # an independent evaluation where one exists (ONNX: onnx's reference evaluator)

Importing this package imports no machine-learning library (not even numpy):
each loader imports its library inside the function that needs it.
`peek_input_width` reads the input width straight from the file for `fairspec lint`.
"""

from __future__ import annotations

import pathlib

from .base import FORMATS, LoadedModel, ModelLoadError, check_score_kind, normalize_format, short_error
from .peek import peek_input_width

__all__ = ["ModelLoadError", "LoadedModel", "load_model", "peek_input_width"]

def load_model(format: str, path, *, output: str | int | None = None, index: int | None = None,
               score_kind: str | None = None, trust_pickle: bool = False, rounds: str | None = None) -> LoadedModel:
    """Load a model file; every failure is a ModelLoadError with one sentence naming the file.

    output:      ONNX: the graph output's name or position; torch: the position (or key) in a
                 tuple/dict returned by forward(); sklearn: "predict_proba"/"prob" (default)
                 or "decision_function"/"logit"; xgboost, lightgbm: "prob" (default) or "margin".
    index:       the column of a 2-D output (ONNX, torch: default 0; sklearn predict_proba: default 1).
    score_kind:  "logit" | "prob", overriding the default guess; sets the threshold (0.0 / 0.5).
    trust_pickle: allow pickled files (torch.save modules, .pkl/.pickle/.joblib estimators).
    rounds:      xgboost: "best" (the rounds XGBClassifier.predict uses, 0 .. best_iteration) or
                 "all" (every round, Booster.predict); required when the file records a best
                 iteration that leaves rounds out (early stopping). Other formats: None.
    """
    p = pathlib.Path(path)
    fmt = normalize_format(format, p)
    check_score_kind(score_kind, p)
    if rounds is not None and fmt != "xgboost":
        raise ModelLoadError(f"rounds = {rounds} is an option of XGBoost models, not of the {fmt} model {p}", p)
    try:
        if fmt == "onnx":
            from .onnx_model import load_onnx

            return load_onnx(p, output=output, index=index, score_kind=score_kind)
        if fmt == "torch":
            from .torch_model import load_torch

            return load_torch(p, output=output, index=index, score_kind=score_kind, trust_pickle=trust_pickle)
        if fmt in ("xgboost", "lightgbm"):
            from .boosted import load_lightgbm, load_xgboost

            if fmt == "xgboost":
                return load_xgboost(p, output=output, index=index, score_kind=score_kind, rounds=rounds)
            return load_lightgbm(p, output=output, index=index, score_kind=score_kind)
        from .sklearn_model import load_sklearn

        return load_sklearn(p, output=output, index=index, score_kind=score_kind, trust_pickle=trust_pickle)
    except ModelLoadError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the last net: no raw exception (nor sys.exit) escapes
        raise ModelLoadError(f"loading {fmt} model {p} failed: {short_error(exc)}", p) from exc
