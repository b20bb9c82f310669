"""The inert unpickler behind the cheap look-ups into torch and scikit-learn pickles (fairspec.models.peek):
every global a pickle names becomes an inert stub that records its arguments and state, so nothing from
the file is imported or called. Safe without `trust pickle`: no code runs."""

from __future__ import annotations

import io
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


# the first bytes of every file joblib.load or pickle.load can read as a model: a protocol 2+ pickle
# (PROTO), a protocol 0/1 pickle of an object (GLOBAL, MARK) and joblib's compressed files
_PICKLE_STARTS = (b"\x80", b"c", b"(")
_JOBLIB_STARTS = (b"ZF", b"\x78", b"\x1f\x8b", b"BZ", b"\xfd7zXZ", b"\x5d\x00", b"\x04\x22\x4d\x18")


def not_a_pickle(p: pathlib.Path) -> str | None:
    """Why the file at ``p`` certainly cannot be loaded as a pickled model, from its first bytes alone
    (nothing is unpickled, so this is safe without `trust pickle`), or None: empty, a start no pickle
    and no joblib file has (a CSV, text, a zip archive), a pickle protocol this Python cannot read."""
    try:
        with open(p, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return None  # said by the loader, with the reason
    if not head:
        return f"model file {p} is empty (0 bytes), not a pickle"
    if not head.startswith(_PICKLE_STARTS + _JOBLIB_STARTS):
        return (f"model file {p} is not a pickle or joblib file (it does not begin as pickle.dump and "
                f"joblib.dump write one)")
    if head[:1] == b"\x80" and len(head) > 1 and head[1] > pickle.HIGHEST_PROTOCOL:
        return (f"model file {p} is a pickle of protocol {head[1]}, which this Python cannot read (protocols "
                f"0 to {pickle.HIGHEST_PROTOCOL})")
    if head[:1] == b"\x80" and _truncated(p):
        return (f"model file {p} is a truncated pickle (the file ends before the pickled object does), as a "
                f"copy or download cut short leaves one")
    return None


def _truncated(p: pathlib.Path) -> bool:
    """The protocol 2+ pickle at ``p`` ends before its STOP opcode, read by the inert unpickler (nothing
    runs). joblib's uncompressed files interleave raw array bytes after a ``joblib...NumpyArrayWrapper``,
    which no unpickler but joblib's reads: a file that named a joblib class first is never called truncated."""
    try:
        if p.stat().st_size > _MAX_PICKLE_BYTES:
            return False
        unpickler = _InertUnpickler(io.BytesIO(p.read_bytes()))
        unpickler.load()
    except EOFError:
        pass
    except pickle.UnpicklingError as e:
        if "truncated" not in str(e) and "exhausted" not in str(e):
            return False
    except Exception:  # noqa: BLE001 - another failure is not a truncation; the loader says it
        return False
    else:
        return False
    return not any("joblib" in module for module, _ in unpickler._classes)
