"""FairspecError: what the Python entry points (fairspec.api, fairspec.pipeline) raise when the caller's
arguments cannot be used -- one sentence, never a traceback from deep inside. A leaf module, so that
the pipeline and the API it sits under raise the same type."""

from __future__ import annotations


class FairspecError(Exception):
    """The spec, a model or a data object could not be used (one sentence; diagnostics attached)."""

    def __init__(self, message: str, diagnostics: list | None = None):
        super().__init__(message)
        self.diagnostics = diagnostics or []


def undeclared(spec, what: str, plural: str, name: str, declared) -> FairspecError:
    """'the spec S declares no model named 'x' (models: a, b)': a name given for a declaration the
    spec does not make (``models={...}`` / ``data={...}``), with the declared ones."""
    return FairspecError(f"the spec {spec} declares no {what} named {name!r} "
                         f"({plural}: {', '.join(declared) or 'none'})")
