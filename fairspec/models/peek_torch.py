"""The torch family of the cheap model-file look-ups (fairspec.models.peek): the archive's data.pkl
(TorchScript archives and zip-format torch.save files) is read by the inert unpickler
(fairspec.models.inert_pickle) and the first Linear layer's in_features is taken, without importing torch."""

from __future__ import annotations

import os
import pathlib
import zipfile

from .base import ModelLoadError, require_file
from .inert_pickle import _MAX_PICKLE_BYTES, _FakeTensor, _InertUnpickler, _state, _Stub


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
    require_file(p)
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
