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
    from importlib.metadata import version

    out = []
    for module, cls_name, attr, params, user in INTERNALS:
        where = f"{module}.{cls_name}.{attr}"
        try:
            cls = getattr(importlib.import_module(module), cls_name)
        except (ImportError, AttributeError):
            out.append(f"pygls {version('pygls')} has no {module}.{cls_name}, whose {attr} {user} relies on")
            continue
        obj = cls if hasattr(cls, attr) else _instance(cls)
        if obj is None or not hasattr(obj, attr):
            out.append(f"pygls {version('pygls')} has no {where}, which {user} relies on")
            continue
        if params is not None:
            got = tuple(p for p in inspect.signature(getattr(cls, attr)).parameters if p != "self")
            if got[:len(params)] != params:
                out.append(f"pygls {version('pygls')} changed {where}{inspect.signature(getattr(cls, attr))} "
                           f"(fairspec calls it as ({', '.join(params)})), which {user} relies on")
    return out
