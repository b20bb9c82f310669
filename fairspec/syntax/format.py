"""`fairspec fmt`: one canonical layout for .fair files, built on the parser.

The layout is computed from the concrete parse tree (Lark with every token
kept) and the comments the lexer skips:

- every declaration, feature, encoding line, distribution row and statement
  starts its own line, indented two spaces per enclosing block; a block's `{`
  ends its header line and its `}` has a line of its own;
- the `:` of the features of one block, and of the encoding lines of one
  encode block, line up;
- one space between tokens except inside brackets, before `,` `)` `]`, around
  `.`, after a unary minus, inside `|...|`, before a call's `(` and in
  `name: value` (maps, policy parameters);
- a line break the author put inside a declaration (a long argument list) is
  kept: the next line lines up after the innermost open bracket, or hangs two
  spaces in when the bracket ends its line;
- comments stay where they were: at the end of their line (two spaces before
  `#`) or on a line of their own; runs of blank lines become one, and there is
  none after `{` or before `}`.

Only white space changes, so the token sequence (and with it the IR) is the
same before and after; :func:`format_text` checks the token sequence before it
returns, and formatting twice gives the same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from lark import Lark, Token, Tree

from fairspec import paths
from fairspec.syntax.parser import parse_text

# rules whose direct `{ ... }` is a block of line items
BLOCKS = {"features_decl", "encode_decl", "distribution_table", "property_decl", "repair_decl", "policy_decl"}
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}


class _Comments:
    """Comments seen by the lexer during one parse (the grammar %ignores them)."""

    items: list[Token] = []

    def __call__(self, tok: Token) -> Token:
        self.items.append(tok)
        return tok


_COMMENTS = _Comments()


@lru_cache(maxsize=1)
def _concrete_parser() -> Lark:
    grammar = paths.grammar_file().read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", keep_all_tokens=True, maybe_placeholders=False,
                lexer_callbacks={"COMMENT": _COMMENTS}, cache=True)


@dataclass
class _Tok:
    tok: Token
    parent: str = ""           # the rule whose direct child this token is
    first_in_parent: bool = False
    depth: int = 0             # enclosing blocks
    item_start: bool = False   # the first token of a line item
    block_open: bool = False
    block_close: bool = False
    pad: int | None = None     # spaces before an aligned ':'
    comment: bool = False
    children: list = field(default_factory=list)

    @property
    def text(self) -> str:
        return str(self.tok)


def _tokens_of(tree) -> list[Token]:
    """The tokens of a concrete subtree, left to right (iteratively, like _walk)."""
    out, stack = [], [tree]
    while stack:
        n = stack.pop()
        if isinstance(n, Token):
            out.append(n)
        elif isinstance(n, Tree):
            stack.extend(reversed(n.children))
    return out


def _walk(tree: Tree, depth: int, out: list[_Tok]) -> None:
    """Flatten the concrete tree into tokens annotated with their layout role (iteratively: a
    deeply nested expression that parses must not exhaust Python's stack here)."""
    # entries: (node, depth, starts an item) for a subtree, or a _Tok ready to emit
    stack: list = [(c, depth, True) for c in reversed(tree.children)]
    pending = False  # the next token emitted starts a line item
    while stack:
        top = stack.pop()
        if isinstance(top, _Tok):
            top.item_start = top.item_start or pending
            pending = False
            out.append(top)
            continue
        node, d, is_item = top
        pending = pending or is_item
        if isinstance(node, Token):
            stack.append(_Tok(node, depth=d))
            continue
        is_block = node.data in BLOCKS
        last_close = None
        if is_block:
            for i, c in enumerate(node.children):
                if isinstance(c, Token) and c == "}" and c.type != "STRING":
                    last_close = i
        _align(node)
        opened = False
        entries = []
        for i, c in enumerate(node.children):
            if isinstance(c, Token):
                t = _Tok(c, parent=node.data, first_in_parent=(i == 0), depth=d)
                if is_block and not opened and c == "{" and c.type != "STRING":
                    t.block_open, opened = True, True
                elif is_block and i == last_close:
                    t.block_close = True
                if c == ":" and c.type != "STRING" and node.data in ("feature", "enc_line"):
                    t.pad = getattr(node, "_pad", None)
                entries.append(t)
            elif is_block and opened:
                entries.append((c, d + 1, True))
            else:
                entries.append((c, d, False))
        stack.extend(reversed(entries))


def _key_width(node: Tree) -> int | None:
    """The width of what precedes the ':' of a feature or encoding line (None: spans lines)."""
    head = node.children[0]
    toks = _tokens_of(head)
    if len({t.line for t in toks}) > 1:
        return None
    names = [t for t in toks if t.type != "COMMA"]
    return sum(len(t) for t in names) + 2 * (len(names) - 1)


def _align(node: Tree) -> None:
    """Store on each feature / encoding line of a block the padding that lines up its ':'."""
    if node.data not in ("features_decl", "encode_decl"):
        return
    lines = [c for c in node.children if isinstance(c, Tree) and c.data in ("feature", "enc_line")]
    widths = {id(c): _key_width(c) for c in lines}
    known = [w for w in widths.values() if w is not None]
    if not known:
        return
    top = max(known)
    for c in lines:
        w = widths[id(c)]
        c._pad = 1 if w is None else top - w + 1  # noqa: SLF001 - a layout note on the concrete tree


def _space(prev: _Tok, cur: _Tok) -> str:
    p, c = prev.text, cur.text
    ps, cs = prev.tok.type == "STRING", cur.tok.type == "STRING"
    if cur.pad is not None:
        return " " * cur.pad
    if not ps and (p in ("(", "[", ".") or (p == "{" and not prev.block_open)):
        return ""
    if not ps and p == "|" and prev.parent == "abs" and prev.first_in_parent:
        return ""
    if not ps and p == "-" and prev.parent in ("neg", "signed"):
        return ""
    if not cs and (c in (")", "]", ",", ".") or (c == "}" and not cur.block_close)):
        return ""
    if not cs and c == "|" and cur.parent == "abs" and not cur.first_in_parent:
        return ""
    if not cs and c == "*" and cur.parent == "star_ref":
        return ""
    if not cs and c == ":" and cur.parent in ("map_item", "param"):
        return ""
    if not cs and c == "(" and (prev.tok.type == "NAME" or (p == "p" and cur.parent == "cpt_entry")):
        return ""
    return " "


class FormatError(Exception):
    """The formatter would change a token (a fairspec bug): nothing is written."""


def format_text(text: str, file: str = "<string>") -> str:
    """The canonical layout of `text`, with its line end (\\n, \\r\\n or \\r, as its first line ends); raises
    DiagnosticError (FS1xx) when it does not parse."""
    parse_text(text, file)  # the ordinary parser gives the diagnostics of a file that does not parse
    end = re.search(r"\r\n|\r|\n", text)
    # laid out with \n (a lone \r ends a line, as parse_text reads it), then written with the file's line end
    text = re.sub(r"\r\n?", "\n", text)
    _COMMENTS.items = []
    tree = _concrete_parser().parse(text)
    comments, _COMMENTS.items = _COMMENTS.items, []
    toks: list[_Tok] = []
    _walk(tree, 0, toks)
    toks = [t for t in toks if t.tok.type != "COMMENT"]
    stream = sorted(toks + [_Tok(c, comment=True) for c in comments], key=lambda t: t.tok.start_pos)
    out = _layout(text, stream)
    if _significant(out) != _significant(text):
        raise FormatError(f"formatting {file} would change its tokens")
    return out if end is None or end.group() == "\n" else out.replace("\n", end.group())


def _significant(text: str) -> list[tuple[str, str]]:
    _COMMENTS.items = []
    tree = _concrete_parser().parse(text)
    comments, _COMMENTS.items = _COMMENTS.items, []
    return [(t.type, str(t)) for t in _tokens_of(tree)] + [("COMMENT", str(c).rstrip()) for c in comments]


def _layout(text: str, stream: list[_Tok]) -> str:
    lines: list[str] = []
    indents: list[int] = []
    item_indent = 0
    brackets: list[list] = []  # [its line, column after it, hanging (None until the next token decides)]
    prev: _Tok | None = None
    after_block_open = False  # the last line ends a block header: no blank line below it

    def newline(indent: int, blank: bool) -> None:
        nonlocal after_block_open
        if blank and lines and not after_block_open and lines[-1] != "":
            lines.append("")
            indents.append(0)
        lines.append(" " * indent)
        indents.append(indent)
        after_block_open = False

    def next_code(i: int) -> _Tok | None:
        return next((t for t in stream[i + 1:] if not t.comment), None)

    def continuation() -> int:
        if brackets:
            line, col, hanging = brackets[-1]
            return indents[line] + 2 if hanging else col
        return item_indent + 4

    for i, t in enumerate(stream):
        g = text[prev.tok.end_pos:t.tok.start_pos] if prev is not None else ""
        blank = g.count("\n") >= 2
        own_line = prev is None or "\n" in g or prev.comment
        if brackets and brackets[-1][2] is None and (own_line or not t.comment):
            brackets[-1][2] = own_line
        if t.comment:
            if not own_line:
                lines[-1] += "  " + t.text.rstrip()
            else:
                nxt = next_code(i)
                between = nxt is None or nxt.item_start or nxt.block_close
                if nxt is None or nxt.item_start:
                    ind = 2 * nxt.depth if nxt else 0
                elif nxt.block_close:
                    ind = 2 * (nxt.depth + 1)
                else:
                    ind = continuation()
                newline(ind, blank and between)
                lines[-1] += t.text.rstrip()
            prev = t
            continue
        # a block's { after a comment that ends the header's line goes on a line of its own (on the comment's
        # line the comment would swallow it): `features F from d  # note` then `{` on the next line
        if prev is None or t.item_start or t.block_close or prev.block_open or (own_line and not t.block_open) \
                or prev.comment:
            if t.item_start:
                item_indent = 2 * t.depth
                brackets.clear()
                newline(item_indent, blank)
            elif t.block_close:
                brackets.clear()
                newline(2 * t.depth, False)
            elif t.block_open:
                newline(item_indent, False)
            else:
                closing = t.text in _CLOSE and t.tok.type != "STRING" and brackets
                newline(indents[brackets[-1][0]] if closing else continuation(), False)
            lines[-1] += t.text
        else:
            lines[-1] += _space(prev, t) + t.text
        if t.block_open:
            after_block_open = True
        elif t.tok.type != "STRING":
            if (t.text in _OPEN) or (t.text == "|" and t.parent == "abs" and t.first_in_parent):
                brackets.append([len(lines) - 1, len(lines[-1]), None])
            elif (t.text in _CLOSE and not t.block_close) or (t.text == "|" and t.parent == "abs"):
                if brackets:
                    brackets.pop()
        prev = t
    while lines and lines[-1].strip() == "":
        lines.pop()
    return "\n".join(line.rstrip() for line in lines) + "\n" if lines else ""


def format_file(path, *, write: bool = True) -> bool:
    """Format one file in place; True when its layout changed (and, with write, was rewritten).

    The file is replaced atomically through fairspec.files.safe_write (the one writer: a temporary
    file in the same folder, then os.replace), keeping its permissions.  A path that is not a
    regular file (a folder, a FIFO: never opened, it would block), a file that does not parse, a
    read-only file (no write bit, or one the user cannot write) or a symbolic link to a file
    outside the link's project raises DiagnosticError and is not touched.
    """
    from pathlib import Path

    from fairspec.diagnostics import Diagnostic, DiagnosticError
    from fairspec.files import PathError, Roots, _real, folder_project, require_file, safe_write
    from fairspec.syntax.parser import read_source

    p = Path(path)
    try:
        require_file(p, "the spec")
    except PathError as e:
        raise DiagnosticError(Diagnostic("FS203", str(e), None, "error", "give the path of a .fair file")) from None
    text = read_source(p)
    out = format_text(text, str(p))
    if out == text:
        return False
    if write:
        try:  # the user named this file: its own folder is the root
            if p.is_symlink():  # written through to its target, unless that leaves the link's project
                project = folder_project(_real(p.absolute().parent))
                if not Roots(project).contains(p):
                    raise PathError(f"{path} is a symbolic link to {_real(p)}, outside the project {project}; "
                                    f"fmt rewrites only files inside it (name the file itself)")
            safe_write(p, out.encode("utf-8"), Roots(_real(p).parent), what="spec file")
        except PathError as e:
            raise DiagnosticError(Diagnostic("FS203", f"cannot rewrite the spec: {e}", None, "error",
                                             "the file is left as it is")) from None
    return True
