"""XGBoost (JSON / UBJSON model files) and LightGBM (text model files) binary classifiers.

Both libraries are optional extras (``pip install 'specfair[xgboost]'`` /
``'specfair[lightgbm]'``), imported only here, when such a model is loaded. The declared
output is the probability of class 1 (``predict``; ``index = 0`` for class 0) or the raw
margin (``output = "margin"`` / ``"logit"``); evaluation and the replay of witnesses go
through the library's own ``predict``.
"""

from __future__ import annotations

import pathlib

from .base import LoadedModel, ModelLoadError, check_score_kind, require_file, short_error

_MARGIN = ("margin", "logit", "raw", "raw_score", "decision_function")
_PROB = ("prob", "probability", "predict", "predict_proba", "proba")


def _output(output, index, path, fmt) -> tuple[bool, int]:
    out = None if output is None else str(output).strip().lower()
    if out is not None and out not in _MARGIN + _PROB:
        raise ModelLoadError(f"the output {output!r} chosen for {fmt} model {path} is not 'prob' or 'margin'", path)
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index not in (0, 1)):
        raise ModelLoadError(f"the index {index!r} chosen for {fmt} model {path} is not 0 or 1 (a binary classifier)",
                             path)
    return out in _MARGIN, 1 if index is None else index


def _need(module: str, extra: str, path: pathlib.Path):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ModelLoadError(f"loading {path} needs {module}, which is not installed "
                             f"(pip install 'specfair[{extra}]')", path) from exc


class _Boosted(LoadedModel):
    """Shared by both: class-1 probability or margin, flipped for ``index = 0``."""

    def _setup(self, path, fmt, width, margin: bool, index: int, score_kind, raw):
        kind = check_score_kind(score_kind, path) or ("logit" if margin else "prob")
        self.margin = margin
        self.index = index
        self._init_common(path, fmt, width, kind, raw)

    def output_description(self) -> str:
        what = "margin" if self.margin else "probability"
        return f"{what} of class {self.index}"

    def _score(self, X):
        import numpy as np

        y = np.asarray(self._predict(X, self.margin), dtype=np.float64).reshape(-1)
        if self.index == 0:
            y = -y if self.margin else 1.0 - y
        return y

    def _outputs(self, X):
        """The library's own output: class 1's probability (or margin) as one column, never flipped
        by ``index`` (fairspec.models.readout reads classes from it)."""
        import numpy as np

        return np.asarray(self._predict(X, self.margin), dtype=np.float64)

    def _predict(self, X, margin: bool):  # pragma: no cover - abstract
        raise NotImplementedError

    _convert = ""                       # the converter in fairspec.models.trees for this library

    def tree_ensemble(self):
        if getattr(self, "_trees", None) is None:
            from fairspec.models import trees

            self._trees = getattr(trees, self._convert)(self.raw, index=self.index)
        return self._trees


def xgb_matrix(xgb, booster, X):
    """:func:`fairspec.models.trees.xgb_matrix` (defined there, so that the tree converter does not
    import this module: no import cycle)."""
    from fairspec.models.trees import xgb_matrix as matrix

    return matrix(xgb, booster, X)


class XGBoostModel(_Boosted):
    def __init__(self, path: pathlib.Path, *, output=None, index=None, score_kind=None):
        require_file(path)
        margin, idx = _output(output, index, path, "XGBoost")
        xgb = _need("xgboost", "xgboost", path)
        from .treefile import check_xgboost

        check_xgboost(path)  # the library crashes on a malformed tree: checked here first
        try:
            booster = xgb.Booster()
            booster.load_model(str(path))
        except Exception as exc:  # noqa: BLE001
            raise ModelLoadError(f"{path} is not an XGBoost model file xgboost can read: {short_error(exc)}",
                                 path) from exc
        import json

        try:
            obj = json.loads(booster.save_config())["learner"]["objective"]["name"]
        except Exception:  # noqa: BLE001
            obj = ""
        if not (obj.startswith("binary:") or obj == "reg:logistic"):
            raise ModelLoadError(f"{path} holds an XGBoost model with objective {obj!r}; fairspec reads binary "
                                 "classifiers (binary:logistic)", path)
        self._xgb = xgb
        self.input_names = tuple(booster.feature_names or ()) or None
        self._setup(path, "xgboost", int(booster.num_features()) or None, margin, idx, score_kind, booster)

    def _predict(self, X, margin):
        return self.raw.predict(xgb_matrix(self._xgb, self.raw, X), output_margin=margin)

    _convert = "from_xgboost"


class LightGBMModel(_Boosted):
    def __init__(self, path: pathlib.Path, *, output=None, index=None, score_kind=None):
        require_file(path)
        margin, idx = _output(output, index, path, "LightGBM")
        lgb = _need("lightgbm", "lightgbm", path)
        from .treefile import check_lightgbm

        check_lightgbm(path)  # the library crashes on a malformed tree: checked here first
        try:
            booster = lgb.Booster(model_file=str(path))
        except Exception as exc:  # noqa: BLE001
            raise ModelLoadError(f"{path} is not a LightGBM model file lightgbm can read: {short_error(exc)}",
                                 path) from exc
        obj = str(booster.params.get("objective", "") or "")
        if not obj:
            try:
                obj = str(booster.dump_model(num_iteration=0).get("objective", ""))
            except Exception:  # noqa: BLE001
                obj = ""
        if obj.split()[:1] not in (["binary"], ["cross_entropy"], ["xentropy"]):
            raise ModelLoadError(f"{path} holds a LightGBM model with objective {obj!r}; fairspec reads binary "
                                 "classifiers (objective binary)", path)
        names = tuple(booster.feature_name() or ())
        self.input_names = names if names and not all(n.startswith("Column_") for n in names) else None
        self._setup(path, "lightgbm", int(booster.num_feature()) or None, margin, idx, score_kind, booster)

    def _predict(self, X, margin):
        return self.raw.predict(X, raw_score=margin)

    _convert = "from_lightgbm"


def load_xgboost(path, **kw) -> XGBoostModel:
    return XGBoostModel(pathlib.Path(path), **kw)


def load_lightgbm(path, **kw) -> LightGBMModel:
    return LightGBMModel(pathlib.Path(path), **kw)
