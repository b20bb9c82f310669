"""Positions between fairspec and the language server protocol.

fairspec's spans are 1-based (line, column) with lines cut at ``\\n`` alone (the lexer's, lark's) and
columns in code points. LSP positions are 0-based (line, character) with lines cut at ``\\n``,
``\\r\\n`` and ``\\r`` (and nothing else: not U+2028, a form feed or U+0085, which ``str.splitlines``
also cuts at) and characters in the negotiated encoding's code units (UTF-16 unless the client
offered another: pygls's :class:`~pygls.workspace.position_codec.PositionCodec`).

Both are converted through an offset into the text the span was read from, so a file with lone
``\\r`` line ends (one line for fairspec, several for LSP) and a line holding characters outside
the Basic Multilingual Plane map exactly. The unit conversion itself is pygls's codec.
"""

from __future__ import annotations

import bisect
import itertools
import re
from functools import cached_property, lru_cache

from lsprotocol import types as T

_LSP_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_ENDING = re.compile(r"(?:\r\n|\r|\n)\Z")
_OTHER_BREAK = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # where str.splitlines also cuts


def lsp_lines(text: str) -> tuple[str, ...]:
    """The text's lines as LSP counts them, each with its line end (``str.splitlines(True)`` but
    cut at ``\\n``, ``\\r\\n`` and ``\\r`` only)."""
    return lines_of(text).lines


class Lines:
    """One text's line tables: where each LSP line and each fairspec line starts."""

    def __init__(self, text: str):
        self.text = text
        # str.splitlines is exact (and faster) unless the text holds a break LSP does not count
        self.lines = tuple(_LSP_LINE.findall(text) if _OTHER_BREAK.search(text) else text.splitlines(True))

    @cached_property
    def lsp_starts(self) -> list[int]:
        return list(itertools.accumulate((len(ln) for ln in self.lines[:-1]), initial=0)) if self.lines else []

    @cached_property
    def fs_starts(self) -> list[int]:
        return [0] + [m.end() for m in re.finditer("\n|\r(?!\n)", self.text)]  # as parse_text (LONE_CR)

    def _content(self, i: int) -> int:
        """The length of LSP line i without its line end."""
        ln = self.lines[i]
        m = _ENDING.search(ln)
        return len(ln) - (len(m.group()) if m else 0)

    # ------------------------------------------------------------ fairspec <-> offset
    def offset(self, line: int, column: int) -> int:
        """The offset of fairspec's 1-based (line, column), clamped to the text and to its line."""
        if line < 1:
            return 0
        if line > len(self.fs_starts):
            return len(self.text)
        start = self.fs_starts[line - 1]
        end = self.fs_starts[line] - 1 if line < len(self.fs_starts) else len(self.text)
        return min(start + max(column - 1, 0), end)

    def fairspec(self, offset: int) -> tuple[int, int]:
        """fairspec's 1-based (line, column) of an offset."""
        offset = min(max(offset, 0), len(self.text))
        i = bisect.bisect_right(self.fs_starts, offset) - 1
        return i + 1, offset - self.fs_starts[i] + 1

    # ------------------------------------------------------------ LSP <-> offset
    def position(self, offset: int, codec) -> T.Position:
        """The LSP position of an offset, in the codec's units."""
        offset = min(max(offset, 0), len(self.text))
        if not self.lines:
            return T.Position(0, 0)
        if offset == len(self.text) and _ENDING.search(self.text):
            return T.Position(len(self.lines), 0)  # after the last line end: the empty last line
        i = bisect.bisect_right(self.lsp_starts, offset) - 1
        col = min(offset - self.lsp_starts[i], self._content(i))  # between a \r and its \n: the line's end
        return codec.position_to_client_units(self.lines, T.Position(i, col))

    def from_position(self, pos: T.Position, codec) -> int:
        """The offset of an LSP position in the codec's units (past a line's end: its end; past the
        last line: the end of the text)."""
        if pos.line >= len(self.lines):
            return len(self.text)
        n = self._content(pos.line)
        units = codec.client_num_units(self.lines[pos.line][:n])
        # a copy, clamped first: pygls's codec rewrites the position it is given and clamps one short
        got = codec.position_from_client_units(self.lines, T.Position(pos.line, min(pos.character, units)))
        return self.lsp_starts[pos.line] + min(got.character, n)

    def line_end(self, line: int, codec) -> T.Position:
        """The end of LSP line ``line`` (before its line end), in the codec's units."""
        if line >= len(self.lines):
            return T.Position(line, 0)
        return T.Position(line, codec.client_num_units(self.lines[line][:self._content(line)]))

    # ------------------------------------------------------------ both ways
    def to_lsp(self, line: int, column: int, codec) -> T.Position:
        return self.position(self.offset(line, column), codec)

    def to_fairspec(self, pos: T.Position, codec) -> tuple[int, int]:
        return self.fairspec(self.from_position(pos, codec))


@lru_cache(maxsize=4)
def lines_of(text: str) -> Lines:
    """The line tables of a text (the last few texts are kept: a request, its diagnostics and the
    document's own line splitting ask for the same text; the offsets are computed when asked)."""
    return Lines(text)


# ------------------------------------------------------------ an older text and the newer one

def _common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # by halves: each comparison is one C-level slice compare
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, most: int) -> int:
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class Changed:
    """Where an older text of a document and its newer text agree: their common prefix, their common
    suffix, and between them the lines difflib matches (each block the same characters in both). An
    offset in one text has a counterpart in the other when it lies in such a block; inside a changed
    part it has none (None), so an answer computed on the older text is never moved onto another
    place."""

    def __init__(self, old: str, new: str):
        import difflib
        import itertools

        self.old, self.new = old, new

        prefix = _common_prefix(old, new)
        suffix = _common_suffix(old, new, min(len(old), len(new)) - prefix)
        a = old[prefix:len(old) - suffix].splitlines(True)
        b = new[prefix:len(new) - suffix].splitlines(True)
        a_at = list(itertools.accumulate(map(len, a), initial=prefix))
        b_at = list(itertools.accumulate(map(len, b), initial=prefix))
        # (start in the older text, start in the newer, length): blocks of the same characters
        self.blocks = [(0, 0, prefix)] + [
            (a_at[i], b_at[j], a_at[i + n] - a_at[i])
            for i, j, n in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks() if n
        ] + [(len(old) - suffix, len(new) - suffix, suffix)]

    def to_old(self, offset: int) -> int | None:
        """The offset in the older text of the character at ``offset`` in the newer one."""
        return next((o + offset - n for o, n, k in self.blocks if n <= offset < n + k), None)

    def to_new(self, offset: int) -> int | None:
        """The offset in the newer text of the character at ``offset`` in the older one."""
        return next((n + offset - o for o, n, k in self.blocks if o <= offset < o + k), None)

    def span_to_new(self, start: int, end: int) -> tuple[int, int] | None:
        """The offsets in the newer text of the older text's [start, end), when it lies in one block."""
        return next(((n + start - o, n + end - o) for o, n, k in self.blocks if o <= start and end <= o + k
                     and start < o + k), None)

    def span_to_newer(self, span):
        """A fairspec span (1-based lines and columns) of the older text, moved into the newer one
        when it lies in one block of the same characters; else None."""
        import dataclasses

        lines, new = lines_of(self.old), lines_of(self.new)
        moved = self.span_to_new(lines.offset(span.line, span.column), lines.offset(span.end_line, span.end_column))
        if moved is None:
            return None
        (a, b), (c, d) = new.fairspec(moved[0]), new.fairspec(moved[1])
        return dataclasses.replace(span, line=a, column=b, end_line=c, end_column=d)

    def to_older(self, line: int, column: int) -> tuple[int, int] | None:
        """fairspec's (line, column) in the newer text as one in the older text, or None (changed)."""
        old = self.to_old(lines_of(self.new).offset(line, column))
        return None if old is None else lines_of(self.old).fairspec(old)


@lru_cache(maxsize=4)
def changed(old: str, new: str) -> Changed:
    """:class:`Changed` of two texts, kept for the last few pairs: one request moves many spans
    (an outline, semantic tokens) between the same two texts."""
    return Changed(old, new)
