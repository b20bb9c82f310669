"""The inert unpickler behind the cheap look-ups into torch and scikit-learn pickles (fairspec.models.peek):
every global a pickle names becomes an inert stub that records its arguments and state, so nothing from
the file is imported or called. Safe without `trust pickle`: no code runs."""

from __future__ import annotations

import pathlib
import pickle


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
