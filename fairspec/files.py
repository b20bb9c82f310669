"""Every file a spec names goes through here: where the project is, what may be read and written.

A spec may read and write only inside its *project root*, the nearest folder at or above the
spec's own folder that holds a ``fairspec.toml`` or a ``.git`` (the spec's folder when there is
none), plus the policies shipped with fairspec and any folder given with ``--allow-path DIR`` (or listed in
the environment variable FAIRSPEC_ALLOW_PATH).
Imports, data files, model files and a repair's ``write`` all resolve through :class:`Roots`;
a path whose real location (symbolic links followed) lies outside is a :class:`PathError`,
whose message names the path and never shows the file's content.

:func:`safe_write` is the one way fairspec writes a file the user owns: confined, never onto a
folder, a device, a read-only file or a protected file (every file the spec reads: itself, its
imports, its models and data), never through a symbolic link that leads out of the root, and
atomic (a temporary file in the same folder, then a rename; a file with hard links is written in
place from the finished temporary file, so that every name keeps it).

:func:`file_kind` and :func:`os_error` turn what the operating system says about a user's path
into one sentence naming it (a folder, a device, missing, unreadable, a name too long, ...).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

PROJECT_MARKERS = ("fairspec.toml", ".git")
CHART_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".eps", ".ps")  # what a chart option may name
ALLOW_ENV = "FAIRSPEC_ALLOW_PATH"  # more allowed folders, separated by os.pathsep (as --allow-path; CI, tests)


class PathError(Exception):
    """A user's path cannot be used: one sentence naming it."""


class OutsideRoot(PathError):
    """The path lies outside the project root and every allowed folder."""


def _real(p: Path) -> Path:
    """The absolute path with every symbolic link followed (missing tails kept as written)."""
    try:
        return Path(os.path.realpath(p))
    except (OSError, ValueError):
        return Path(os.path.abspath(p))


def real_path(p) -> Path:
    """``Path(p).resolve()`` that never raises: a loop of symbolic links (RuntimeError before Python
    3.13) is left where the loop starts, for file_kind / os_error to name it in a sentence."""
    return _real(Path(p))


def project_root(spec: Path) -> Path:
    """The nearest folder at or above the spec's folder that holds fairspec.toml or .git."""
    return folder_project(_real(Path(spec)).parent)


def folder_project(start: Path) -> Path:
    """The nearest folder at or above the (real) folder ``start`` that holds fairspec.toml or .git."""
    for d in (start, *start.parents):
        for marker in PROJECT_MARKERS:
            try:
                if (d / marker).exists():
                    return d
            except OSError:
                continue
    return start


@dataclass(frozen=True)
class Roots:
    """The folders a spec may read and write: the project root, the shipped policies, --allow-path."""

    project: Path
    extra: tuple[Path, ...] = ()  # the shipped policies and every --allow-path folder

    @classmethod
    def for_spec(cls, spec: Path, allow: Iterable[str | Path] = ()) -> "Roots":
        from fairspec import paths

        env = [a for a in os.environ.get(ALLOW_ENV, "").split(os.pathsep) if a]
        # an empty entry would be the working directory: ignored, as in the environment variable
        # (the command line refuses ``--allow-path ""`` with a sentence)
        extra = [_real(paths.specs_dir())] + [_real(Path(a)) for a in (*allow, *env) if str(a)]
        return cls(project_root(spec), tuple(extra))

    @property
    def all(self) -> tuple[Path, ...]:
        return (self.project, *self.extra)

    def contains(self, p: Path) -> bool:
        real = _real(p)
        return any(real == r or real.is_relative_to(r) for r in self.all)

    def resolve(self, text: str, base: Path, what: str = "path", shown: str | None = None) -> Path:
        """``text`` relative to ``base``; raises OutsideRoot (naming ``shown``, the path as the spec
        writes it, default ``text``) when it leaves the roots."""
        try:
            p = Path(text)
            full = p if p.is_absolute() else Path(base) / p
        except (TypeError, ValueError) as e:  # NUL bytes and the like
            raise PathError(f"the {what} {text!r} is not a valid path ({e})") from None
        if "\x00" in text:
            raise PathError(f"the {what} {text!r} is not a valid path (it holds a NUL character)")
        if not self.contains(full):
            raise OutsideRoot(self.outside_message(shown or text, what))
        return full

    def leads_out(self, path) -> bool:
        """``path`` as written (made absolute, no link followed) lies inside the roots but its real
        location does not: a symbolic link on the way (the file or a folder) leads out of them."""
        lexical = Path(os.path.abspath(path))
        return any(lexical == r or lexical.is_relative_to(r) for r in self.all) and not self.contains(lexical)

    def outside_message(self, text: str, what: str) -> str:
        allowed = " and the folders given with --allow-path" if len(self.extra) > 1 else ""
        return f"the {what} {text!r} is outside the project root {self.project}{allowed}"


# ---------------------------------------------------------------------------- what a path is

def os_error(path, e: OSError, doing: str = "read") -> str:
    """One sentence for an OS error on a user's path."""
    if e.errno == errno.ENAMETOOLONG:
        return f"the path {_short(path)} is too long for the file system"
    if e.errno in (errno.EACCES, errno.EPERM):
        return f"{path} cannot be {doing}: permission denied"
    if e.errno == errno.ENOENT:
        return f"{path} does not exist"
    if e.errno == errno.EISDIR:
        return f"{path} is a folder, not a file"
    if e.errno == errno.ELOOP:
        return f"{path} is a loop of symbolic links"
    if e.errno == errno.ENOTDIR:
        return f"{path} does not exist (a part of the path is a file, not a folder)"
    why = e.strerror or type(e).__name__
    return f"{path} cannot be {doing}: {why[0].lower() + why[1:]}"


def _short(path, limit: int = 120) -> str:
    s = str(path)
    return s if len(s) <= limit else f"{s[:60]}...{s[-40:]} ({len(s)} characters)"


def file_kind(path) -> str:
    """'file', 'missing', 'folder' or 'special' (a device, a pipe, a socket); raises PathError on
    any other OS error (a name too long, permission denied on a folder on the way, ...)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "missing"
    except ValueError as e:
        raise PathError(f"{_short(path)} is not a valid path ({e})") from None
    except OSError as e:
        raise PathError(os_error(path, e)) from None
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "folder"
    return "special"


def require_file(path, what: str = "file") -> None:
    """Raise PathError with one sentence unless ``path`` is a regular file that can be opened."""
    kind = file_kind(path)
    if kind == "missing":
        raise PathError(f"{what} {path} does not exist")
    if kind == "folder":
        raise PathError(f"{what} {path} is a folder, not a file")
    if kind == "special":
        raise PathError(f"{what} {path} is not a regular file (a device, pipe or socket)")
    if not os.access(path, os.R_OK):
        raise PathError(f"{what} {path} cannot be read: permission denied")


# ---------------------------------------------------------------------------- writing

def check_target(path, roots: Roots, *, protect: Iterable[str | Path] = (), what: str = "output file",
                 suffixes: Iterable[str] | None = None) -> Path:
    """The real path :func:`safe_write` would write for ``path``, or PathError (one sentence naming
    it): empty, outside ``roots``, a folder, a device, pipe or socket (never opened: a FIFO would
    block), one of ``protect``, a read-only file, a suffix not in ``suffixes``, or a folder that
    does not exist.
    Lint and the command line call it before any work; safe_write calls it again at the end."""
    if path is None or str(path) == "":
        raise PathError(f"the {what} is empty; name a file")
    if "\x00" in str(path):
        raise PathError(f"the {what} {str(path)!r} is not a valid path (it holds a NUL character)")
    target = Path(path)
    if not roots.contains(target):
        raise OutsideRoot(roots.outside_message(str(path), what))
    real = _real(target)  # a symbolic link inside the roots is written through to its target
    kind = file_kind(real)
    if kind == "folder":
        raise PathError(f"the {what} {path} is a folder; name a file inside it")
    if kind == "special":
        raise PathError(f"the {what} {path} is not a regular file (a device, pipe or socket); name a regular file")
    if suffixes is not None:
        allowed = tuple(s.lower() for s in suffixes)
        if real.suffix.lower() not in allowed or target.suffix.lower() not in allowed:
            raise PathError(f"the {what} {path} must end in {', '.join(allowed)}")
    refuse_protected(path, protect, what, real=real)
    if kind == "file" and read_only(real):
        raise PathError(f"the {what} {path} is read-only; fairspec does not replace it (make it writable, or name "
                        "another file)")
    if file_kind(real.parent) != "folder":
        raise PathError(f"the folder of the {what} {path} does not exist")
    if not os.access(real.parent, os.W_OK | os.X_OK):
        raise PathError(f"the folder of the {what} {path} cannot be written (Permission denied)")
    return real


def refuse_protected(path, protect: Iterable[str | Path], what: str, *, real: Path | None = None) -> None:
    """PathError (one sentence) when ``path`` (its real location) is one of ``protect``, the files a
    spec reads: no writer (--html, a repair's write, a chart) replaces one."""
    real = _real(Path(path)) if real is None else real
    for p in protect:
        if p and _real(Path(p)) == real:
            raise PathError(f"the {what} {path} is a file the spec reads (the spec, a file it imports, a model or "
                            "a data file); write to another file")


def read_only(path) -> bool:
    """The user cannot write the file: os.access says so, or no write bit is set at all (root passes
    os.access whatever the mode, but a 0444 file is the user's way of saying "leave it")."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not os.access(path, os.W_OK) or not stat.S_IMODE(mode) & 0o222


def check_spec_output(text: str, base: Path, roots: Roots, what: str, *,
                      suffixes: Iterable[str] | None = None, protect: Iterable[str | Path] = ()) -> Path:
    """An output path a spec names (a chart): relative to ``base``, no absolute path, no ``..``,
    inside the roots (symbolic links followed), a writable regular-file target (check_target).
    OutsideRoot for the first three, PathError for the rest."""
    if not text:
        raise PathError(f"the {what} is empty; name a file")
    p = Path(text)
    if p.is_absolute():
        raise OutsideRoot(f"the {what} {text!r} is an absolute path; name a file relative to the spec's folder")
    if ".." in p.parts:
        raise OutsideRoot(f"the {what} {text!r} climbs out of the spec's folder ('..'); name a file below it")
    return check_target(Path(base) / p, roots, protect=protect, what=what, suffixes=suffixes)


def safe_write(path, data: bytes | Callable[[Path], None], roots: Roots, *,
               protect: Iterable[str | Path] = (), what: str = "output file",
               suffixes: Iterable[str] | None = None) -> Path:
    """Write ``data`` (bytes, or a function that writes a file at the path it is given) to ``path``.

    Refuses (PathError) what :func:`check_target` refuses: a path outside ``roots``, a folder, a
    device or pipe, a path that is one of ``protect`` (the model being read), a symbolic link
    whose target leaves the roots.
    The content goes to a temporary file in the target's folder, is flushed to disk and then
    renamed over the target, so a reader sees the old file or the new one, never a part; on any
    failure the temporary file is removed.  A target with other names (a hard link: st_nlink > 1)
    is written in place from the finished temporary file instead (a rename would give this name a
    new file and leave the others with the old content); a symbolic link is written through to its
    target (check_target), so the link itself stays.  Returns the real path written.
    """
    real = check_target(path, roots, protect=protect, what=what, suffixes=suffixes)
    kind = file_kind(real)
    folder = real.parent
    from fairspec import interrupt

    interrupt.on_hard_exit(_drop_unfinished)  # a second Ctrl-C / SIGTERM ends the process at once (os._exit)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{real.name}.", suffix=".tmp")
    except OSError as e:
        raise PathError(os_error(folder, e, "written")) from None
    _UNFINISHED.add(tmp)
    try:
        return _finish_write(real, kind, fd, tmp, data, path)
    finally:
        _UNFINISHED.discard(tmp)


#: the temporary files being written now: removed when a second signal ends the process at once (the target
#: keeps its old content; nothing half-written is left beside it in the user's folder)
_UNFINISHED: set = set()


def _drop_unfinished() -> None:
    for tmp in list(_UNFINISHED):
        _unlink(tmp)


def _finish_write(real: Path, kind, fd: int, tmp: str, data, path) -> Path:
    try:
        if callable(data):
            os.close(fd)
            data(Path(tmp))
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        if kind == "file" and _links(real) > 1:   # the same file under other names: keep it, write into it
            _UNFINISHED.discard(tmp)              # (from here on it holds the whole new content: kept on an exit)
            try:
                _copy_into(tmp, real)
            except OSError as e:                  # not atomic: the whole new content stays in tmp, said so
                raise _KeptTemporary(f"{os_error(path, e, 'written')}; the whole new content is kept in {tmp}") from None
            _unlink(tmp)
            return real
        try:  # the permissions of the file replaced, or those a new file gets
            os.chmod(tmp, stat.S_IMODE(os.stat(real).st_mode) if kind == "file" else 0o666 & ~_umask())
        except OSError:
            pass
        os.replace(tmp, real)
    except _KeptTemporary as e:
        raise PathError(str(e)) from None
    except OSError as e:
        _unlink(tmp)
        raise PathError(os_error(path, e, "written")) from None
    except BaseException:
        _unlink(tmp)
        raise
    return real


class _KeptTemporary(Exception):
    """An in-place write that failed part-way: its sentence names the temporary file that holds the
    whole new content (kept, not removed)."""


def _links(p) -> int:
    try:
        return os.stat(p).st_nlink
    except OSError:
        return 1


def _copy_into(src, dst) -> None:
    """The bytes of ``src`` written over the existing file ``dst`` (its inode, and so its other names
    and its mode, kept), flushed to disk."""
    import shutil

    with open(src, "rb") as fin, open(dst, "r+b") as fout:
        shutil.copyfileobj(fin, fout)
        fout.truncate()
        fout.flush()
        os.fsync(fout.fileno())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _unlink(p) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass
