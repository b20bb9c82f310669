"""Where ``--html FILE`` may write (fairspec.report.html renders and writes the report).

The path is the user's own choice on the command line, so it may name any folder (an explicit
path outside the project, ``--html /tmp/report.html``, is written), but never:

* a file the spec reads: the spec, a file it imports, a model or a data file;
* a symbolic link (refused, as a repair's ``write`` refuses one: the link's target is never
  replaced, wherever it points);
* a path inside the project, as written, that a symbolic link on the way (a folder) leads out of
  the project and the folders given with --allow-path;
* what fairspec.files.check_target refuses: a folder, a device or pipe, a read-only file, a folder
  that does not exist;
* a file that already holds something other than an HTML report fairspec wrote (``--html README.md``
  is a slip of the hand, never a wish to lose the file): an empty file or an earlier report is
  replaced, anything else is refused.

The command line checks it before lint, again once lint knows every file the spec reads and
before any model is loaded, and the writer checks it once more at the end.
"""

from __future__ import annotations

import os
from pathlib import Path


class ReportWriteError(Exception):
    """The HTML report cannot be written: one sentence naming the file."""


def check_path(path, keep: tuple = (), *, spec=None, allow=(), foreign: bool = True) -> None:
    """ReportWriteError (one sentence) unless ``path`` can take the HTML report; ``keep``: the files
    it must not replace; with ``spec`` (and ``allow``, the --allow-path folders) also refused
    when a symbolic link leads a path inside the spec's project out of it; with ``foreign``, also
    an existing file that is no report (False before lint, so that a file the spec reads is named as
    that once lint knows)."""
    from fairspec.files import PathError, Roots, check_target, refuse_protected

    if str(path) == "-":  # stdout holds the text report or the --format document, never HTML
        raise ReportWriteError("cannot write the HTML report: --html - would mean stdout, which holds the report "
                               "(or the --format document), never HTML; name a file (./- for a file named '-')")
    if str(path).endswith(("/", os.sep)) and not os.path.isdir(path):  # (pathlib drops the '/': "r.html/" wrote r.html)
        raise ReportWriteError(f"cannot write the HTML report: {path} ends with '/', so it names a folder, which does "
                               f"not exist; name a file (without the '/')")
    try:
        if str(path):  # first: a link to the spec is named for what it would replace
            refuse_protected(path, keep, "HTML report")
        if str(path) and os.path.islink(path):
            raise ReportWriteError(f"cannot write the HTML report: {path} is a symbolic link; name the file itself")
        if spec is not None and str(path):
            roots = Roots.for_spec(Path(spec), allow)
            if roots.leads_out(path):
                raise ReportWriteError(f"cannot write the HTML report: {path} leads out of the project "
                                       f"{roots.project} through a symbolic link; name a file inside the project, "
                                       f"or a path outside it")
        check_target(path, html_roots(path), protect=keep, what="HTML report")
    except PathError as e:
        raise ReportWriteError(f"cannot write the HTML report: {e}") from None
    if foreign and str(path) and not _replaceable(path):
        raise ReportWriteError(f"cannot write the HTML report: {path} exists and is not an HTML report fairspec "
                               f"wrote, so writing it would lose what it holds; name another file, or remove it first")


# what the head of every report fairspec writes starts with: the generator's name (since session 26),
# or, in the reports written before it, the head they all began with
_MARKS = (b'<meta name="generator" content="fairspec">',
          b'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n<meta name="viewport" '
          b'content="width=device-width, initial-scale=1">\n<link rel="icon" href="data:,">')


def _replaceable(path) -> bool:
    """Whether ``path`` may be replaced by a report: it does not exist (or is no regular file: check_target
    judged it), is empty, or its head is a report fairspec wrote."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            return True
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return True  # unreadable: the write itself says why, as before
    return any(m in head for m in _MARKS)


def html_roots(path):
    """The roots an ``--html`` path is checked against: its own (real) folder."""
    from fairspec.files import Roots, _real

    try:
        return Roots(_real(Path(path)).parent if str(path) else Path.cwd())
    except (OSError, ValueError):
        return Roots(Path.cwd())
