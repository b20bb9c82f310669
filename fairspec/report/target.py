"""Where ``--html FILE`` may write (fairspec.report.html renders and writes the report).

The path is the user's own choice on the command line, so it may name any folder (an explicit
path outside the project, ``--html /tmp/report.html``, is written), but never:

* a file the spec reads: the spec, a file it imports, a model or a data file;
* a symbolic link (refused, as a repair's ``write`` refuses one: the link's target is never
  replaced, wherever it points);
* a path inside the project, as written, that a symbolic link on the way (a folder) leads out of
  the project and the folders given with --allow-path;
* what fairspec.files.check_target refuses: a folder, a device or pipe, a read-only file, a folder
  that does not exist.

The command line checks it before lint, again once lint knows every file the spec reads and
before any model is loaded, and the writer checks it once more at the end.
"""

from __future__ import annotations

import os
from pathlib import Path


class ReportWriteError(Exception):
    """The HTML report cannot be written: one sentence naming the file."""


def check_path(path, keep: tuple = (), *, spec=None, allow=()) -> None:
    """ReportWriteError (one sentence) unless ``path`` can take the HTML report; ``keep``: the files
    it must not replace; with ``spec`` (and ``allow``, the --allow-path folders) also refused
    when a symbolic link leads a path inside the spec's project out of it."""
    from fairspec.files import PathError, Roots, check_target, refuse_protected

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


def html_roots(path):
    """The roots an ``--html`` path is checked against: its own (real) folder."""
    from fairspec.files import Roots, _real

    try:
        return Roots(_real(Path(path)).parent if str(path) else Path.cwd())
    except (OSError, ValueError):
        return Roots(Path.cwd())
