"""The pygls internals the language server relies on, named in one place.

pygls 2.x has no public hook for what these do (checked against its 2.1 sources and documentation:
the workspace is built inside ``LanguageServerProtocol.lsp_initialize``, and an error response or a
raw frame has no public sender). The extra keeps a lower bound only (``pygls>=2.1``: the project's
rule, tests/test_packaging.py, so installing fairspec never downgrades a user's library); instead
tests/test_lsp_internals.py fails, naming the internal and its user, when an upgrade removes one or
changes its shape. Where pygls has a public way it is used instead: the shutdown state is the
server's own (``FairspecServer.shut_down``, set by a ``shutdown`` feature handler), not
``protocol._shutdown``, which a ``getattr(..., False)`` read would have lost silently.
"""

from __future__ import annotations

import inspect

# (module, class, attribute, the parameters it must take or None, what relies on it)
INTERNALS = (
    ("pygls.workspace.workspace", "Workspace", "_create_text_document",
     ("doc_uri", "source", "version", "language_id"),
     "fairspec/lsp/server.py _Workspace: every document pygls makes is a _Document (lines cut at \\n, "
     "\\r\\n and \\r only, so an incremental edit after U+2028 lands on the right line)"),
    ("pygls.workspace.workspace", "Workspace", "_sync_kind", None,
     "fairspec/lsp/server.py _Workspace: passed on to the documents it makes"),
    ("pygls.workspace.text_document", "TextDocument", "lines", None,
     "fairspec/lsp/server.py _Document: pygls applies an incremental change through self.lines"),
    ("pygls.protocol.json_rpc", "JsonRPCProtocol", "_send_response", ("msg_id", "result", "error"),
     "fairspec/lsp/server.py _Protocol: an error response never carries a Python traceback"),
    ("pygls.protocol.json_rpc", "JsonRPCProtocol", "_send_data", ("data",),
     "fairspec/lsp/transport.py _error: answers the messages pygls would drop or answer wrongly"),
    ("pygls.protocol.json_rpc", "JsonRPCProtocol", "fm", None,
     "fairspec/lsp/transport.py dispatch: an unknown method (-32601) told from wrong params (-32602)"),
    ("pygls.feature_manager", "FeatureManager", "features", None, "fairspec/lsp/transport.py dispatch"),
    ("pygls.feature_manager", "FeatureManager", "builtin_features", None, "fairspec/lsp/transport.py dispatch"),
    ("pygls.client", "JsonRPCClient", "_server", None,
     "fairspec/lsp/client.py Session.pid: the server process (bench/lsp.py reads its memory)"),
)


def _instance(cls):
    """An instance, for the attributes pygls sets in __init__ (None when one cannot be made here)."""
    from pygls.client import JsonRPCClient
    from pygls.workspace import Workspace

    if issubclass(cls, Workspace):
        return cls(None)
    if issubclass(cls, JsonRPCClient):
        from pygls.lsp.client import LanguageClient

        return LanguageClient("fairspec-check", "0")
    if cls.__name__ == "JsonRPCProtocol":
        from pygls.lsp.server import LanguageServer

        return LanguageServer("fairspec-check", "0").protocol
    if cls.__name__ == "FeatureManager":
        from pygls.lsp.server import LanguageServer

        return LanguageServer("fairspec-check", "0").protocol.fm
    return None


def missing() -> list[str]:
    """One sentence per internal that the installed pygls lacks or has in another shape."""
    import importlib

    v = _installed_version()
    out = []
    for module, cls_name, attr, params, user in INTERNALS:
        where = f"{module}.{cls_name}.{attr}"
        try:
            cls = getattr(importlib.import_module(module), cls_name)
        except (ImportError, AttributeError):
            out.append(f"pygls {v} has no {module}.{cls_name}, whose {attr} {user} relies on")
            continue
        obj = cls if hasattr(cls, attr) else _instance(cls)
        if obj is None or not hasattr(obj, attr):
            out.append(f"pygls {v} has no {where}, which {user} relies on")
            continue
        if params is not None:
            got = tuple(p for p in inspect.signature(getattr(cls, attr)).parameters if p != "self")
            if got[:len(params)] != params:
                out.append(f"pygls {v} changed {where}{inspect.signature(getattr(cls, attr))} "
                           f"(fairspec calls it as ({', '.join(params)})), which {user} relies on")
    return out


# ------------------------------------------------------------------ the pygls a user has

#: the pygls releases the server is written for: the lsp extra's lower bound, and its major version
#: (pygls 1.0 and 2.0 each renamed modules and removed API; no pygls 3 had been released when this was
#: written, 2.1.1 being the newest, so what a 3.x changes cannot be known here and is checked, below)
SUPPORTED = (2, 1)
NEEDED = "pygls 2.x, 2.1 or later"
PIN = "pip install 'pygls>=2.1,<3'"


def _installed_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pygls")
    except PackageNotFoundError:
        return None


def _release(text: str) -> tuple[int, ...]:
    import re

    m = re.match(r"\s*v?(\d+)(?:\.(\d+))?", text)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)


def pygls_problem() -> tuple[str | None, str | None]:
    """(error, warning) about the installed pygls, one sentence each, before `fairspec lsp` serves.

    error: no pygls, one older than 2.1, or one (any release) that the server cannot import from or
    that lacks an internal it relies on (:func:`missing`) -- the server would fail on its first
    message, or at import with a traceback. warning: a major release after 2 that has everything
    checked, so the server starts, but it was never tested there."""
    v = _installed_version()
    if v is None:
        return "fairspec lsp needs pygls: pip install 'specfair[lsp]'", None
    if _release(v) < SUPPORTED:
        return f"fairspec lsp needs {NEEDED}, and pygls {v} is installed: {PIN}", None
    try:
        import fairspec.lsp.server  # noqa: F401 - every public name the server imports from pygls
    except ImportError as e:
        return f"fairspec lsp needs {NEEDED}, and pygls {v} is installed, from which it cannot import ({e}): {PIN}", None
    try:
        gone = missing()
    except Exception as e:  # noqa: BLE001 - a pygls whose objects cannot even be built here
        gone = [f"{type(e).__name__}: {e}"]
    if gone:
        return (f"fairspec lsp needs {NEEDED}, and pygls {v} is installed, which lacks what it relies on "
                f"({gone[0]}): {PIN}"), None
    if _release(v)[0] > SUPPORTED[0]:
        return None, (f"fairspec lsp is written and tested for {NEEDED}, and pygls {v} is installed: it has "
                      f"everything the server checks for, so it starts, but if the editor misbehaves: {PIN}")
    return None, None
