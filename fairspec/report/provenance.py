"""Provenance of a check, for a report an auditor can file: what was checked (the spec and every
model and data file, by SHA-256, and what the check wrote: a repaired model, a PBA chart), by what (fairspec, Python and the installed versions of the
libraries that compute the model's outputs and decide the properties), and when.

Versions are read from the installed distributions' metadata: nothing is imported for them.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import platform
from pathlib import Path

from fairspec.files import real_path

# the libraries whose versions a verdict may depend on (model runtimes, solvers, data readers)
LIBRARIES = ("numpy", "pyarrow", "onnx", "onnxruntime", "torch", "scikit-learn", "skops", "xgboost", "xgboost-cpu",
             "lightgbm", "highspy", "pyscipopt", "z3-solver", "pysmt", "python-sat", "scipy", "dask", "distributed")


def sha256(path) -> str | None:
    """The file's SHA-256 (hex), or None when it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


# (fairspec's version, the libraries' versions), read once per state of the installed distributions:
# reading them costs 8-12 ms CPU here (each version parses its METADATA), once per report of a process
# that checks many times (the Python API in a notebook, the suite's in-process checks). One tuple
# (key, versions), replaced whole: threads read it as a whole
_INSTALLED: tuple = (None, None)


def _metadata_key():
    """What the metadata read depends on: sys.path and each entry's modification time (installing,
    upgrading or removing a distribution adds, renames or removes its *.dist-info in an entry). None
    (read again) when an entry changed in the last 2 s: a file system with coarse times could change it
    again within the same time stamp."""
    import os
    import sys
    import time

    key, now = [], time.time_ns()
    for entry in sys.path:
        try:
            where = os.path.abspath(entry or ".")       # "" is the working folder, wherever it is now
            mtime = os.stat(where).st_mtime_ns
        except (OSError, ValueError, TypeError):
            where, mtime = entry, None
        if mtime is not None and now - mtime < 2_000_000_000:
            return None
        key.append((where, mtime))
    return tuple(key)


def installed() -> tuple[str, dict]:
    """fairspec's version and the libraries' (``_versions``), as the installed metadata says now."""
    from fairspec.meta import version

    global _INSTALLED
    key = _metadata_key()
    kept_key, kept = _INSTALLED
    if key is not None and kept_key == key:
        return kept
    got = (version(), _versions())
    _INSTALLED = (key, got) if key is not None else (None, None)
    return got


def _entry(path: str, role: str, cwd: Path) -> dict:
    p = Path(path)
    try:
        shown = real_path(p).relative_to(cwd).as_posix()
    except (ValueError, OSError):
        shown = str(p)
    try:
        size = p.stat().st_size
    except OSError:
        size = None
    from fairspec.files import file_kind

    try:                    # a FIFO or a device as the spec is never read to its end (it may not have one)
        regular = file_kind(p) == "file"
    except Exception:  # noqa: BLE001 - a path that cannot be looked at is not hashed
        regular = False
    return {"role": role, "file": shown, "sha256": sha256(p) if regular else None, "bytes": size if regular else None}


def collect(report, started: _dt.datetime | None = None) -> dict:
    """The provenance of one report (JSON-ready)."""
    from fairspec.report.ci import repository_root

    cwd = repository_root()  # the paths every format names: from the repository's root (else the working folder)
    files = [_entry(report.spec, "spec", cwd)]
    seen = {real_path(report.spec)}
    for f in getattr(report, "imports", ()) or ():
        if real_path(f) not in seen:
            seen.add(real_path(f))
            files.append(_entry(f, "imported spec", cwd))
    kinds = getattr(report, "input_kinds", {}) or {}
    for f in report.inputs or ():
        if real_path(f) not in seen:
            seen.add(real_path(f))
            files.append(_entry(f, kinds.get(f, "input"), cwd))
    for v in getattr(report, "verdicts", ()) or ():  # what the check wrote: a repaired model, a PBA chart
        d = v.details or {}
        for f in (d.get("written"), *(d.get("charts") or ())):
            if isinstance(f, str) and f and real_path(f) not in seen:
                seen.add(real_path(f))
                files.append(_entry(f, "written", cwd))
    now = started or _dt.datetime.now(_dt.timezone.utc)
    fairspec_version, libraries = installed()
    return {"fairspec": fairspec_version, "python": platform.python_version(), "platform": platform.platform(terse=True),
            "libraries": dict(libraries), "files": files, "invocation": getattr(report, "invocation", None) or {},
            "checked_at": now.astimezone(_dt.timezone.utc).isoformat(timespec="seconds")}
