"""The files the language server reads besides the open documents (fairspec.lsp.server): a file's
text read as the parser reads it, and whether a file lies in the document's project; and where a
document that is not a file is linted (:data:`UNSAVED`), its diagnostics saying so."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import stat
import time
from pathlib import Path

from fairspec.files import real_path

MAX_SPEC_BYTES = 512 << 10  # kept equal to fairspec.syntax.parser's (not imported here: lark loads lazily)
# where a document that is not a file is linted: a folder that does not exist (no project, and
# every relative path in it names nothing)
UNSAVED = Path(os.sep) / "fairspec-unsaved-document"


def confined(uri_or_path: str, root: str) -> bool:
    """The file lies in the project of ``root`` (the document) or the shipped policies."""
    from fairspec.files import Roots

    try:
        return Roots.for_spec(Path(root)).contains(Path(uri_or_path))
    except (OSError, ValueError, RuntimeError):
        return False


def disk_text(file: str) -> str | None:
    """The text of a file no index and no open document holds, read as the parser reads a spec
    (fairspec.diagnostics.file_text: no newline translation, no byte-order mark), so its spans
    convert to the client's units; None when it cannot be read, is over the parser's limit or is no
    regular file (a FIFO named x.fair in the project blocked every rename reading it)."""
    try:
        st = os.stat(file)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    if st.st_size > MAX_SPEC_BYTES + 3:
        return None
    from fairspec.filecache import RECENT_NS

    if abs(time.time_ns() - st.st_ctime_ns) < RECENT_NS:  # changed within a tick of the clock: read (see filecache)
        return _read_text.__wrapped__(file)
    # keyed by the file's whole state: a rewrite keeping the size and modification time (`cp -p`) moves its ctime
    return _read_text(file, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)


@functools.lru_cache(maxsize=8)
def _read_text(file: str, *state) -> str | None:  # (keyed by the file's state)
    from fairspec.diagnostics import file_text

    try:
        return file_text(file)
    except (OSError, ValueError):
        return None


def same(a: str, b: str) -> bool:
    return a == b or real_path(a) == real_path(b)


def unsaved(d):
    """A diagnostic of a document that is not a file, about a path relative to it: said so."""
    where = str(UNSAVED)
    if where not in d.message and where not in (d.hint or ""):
        return d
    message = re.sub(r"\s*\(looked for [^)]*\)", "", d.message).replace(where + os.sep, "")
    return dataclasses.replace(d, message=f"{message}: this document is not saved as a file, so a relative path "
                                          f"in it is relative to no folder",
                               hint="save the document in its project; its imports, models and data are found "
                                    "relative to its file")
