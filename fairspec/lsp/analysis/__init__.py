"""What the editor server knows about a spec, without any protocol types.

:func:`analyse` lints a file (with the editor's unsaved buffers) and indexes
every name in it and in the files it imports: declarations, the features of
each feature set, policy parameters, and each place a name is used.  Hover,
definitions, references, completion, the outline and the quick fixes are
functions of that index; fairspec/lsp/server.py turns them into LSP messages.

The package re-exports them from its modules: ``index`` (analyse, the index, definitions and
references), ``hover`` (hover, signature help), ``completion``, ``edits`` (quick fixes, rename) and
``structure`` (outline, folding, semantic tokens, code lenses).

Positions here are fairspec's: 1-based lines and columns (a Span).
"""

from __future__ import annotations

from .completion import (FEATURE_MODIFIERS, FEATURE_TYPES, KEYWORDS_PROPERTY, KEYWORDS_REPAIR, KEYWORDS_TOP,
                         MODEL_FORMATS, MODEL_OUTPUTS, completions, context_at)
from .edits import RenameError, fixes, rename, rename_target
from .hover import hover, signature_at
from .index import (Index, Occurrence, Symbol, analyse, definition, import_at, lookup, parse_incremental,
                    parse_recovering, references, symbol_at)
from .structure import TOKEN_MODIFIERS, TOKEN_TYPES, folding_ranges, lenses, outline, semantic_tokens


__all__ = ["FEATURE_MODIFIERS", "FEATURE_TYPES", "Index", "KEYWORDS_PROPERTY", "KEYWORDS_REPAIR", "KEYWORDS_TOP", "MODEL_FORMATS", "MODEL_OUTPUTS", "Occurrence", "RenameError", "Symbol", "TOKEN_MODIFIERS", "TOKEN_TYPES", "analyse", "completions", "context_at", "definition", "fixes", "folding_ranges", "hover", "import_at", "lenses", "lookup", "outline", "parse_incremental", "parse_recovering", "references", "rename", "rename_target", "semantic_tokens", "signature_at", "symbol_at"]
