"""Hostile input, the language server (issue 21, class 10): `fairspec lsp` over stdio, spoken to with
raw frames by a client that breaks the protocol. The server must survive and answer every request:
an error response where due (never a traceback), a bounded amount of work per document, and no
location outside the document's project.

Waits are guards against a wedged server, never speed requirements.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from fairspec.lsp.client import server_command  # noqa: E402

GUARD = 240.0


class Raw:
    """`fairspec lsp` as a subprocess; frames written byte for byte, replies read as they come."""

    def __init__(self, cwd: Path, env: dict | None = None):
        e = dict(os.environ)
        e.pop("FAIRSPEC_DEBUG", None)
        e.update(env or {})
        self.p = subprocess.Popen(server_command(), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=e)
        self.replies: queue.Queue = queue.Queue()
        self.err: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.err.extend(self.p.stderr), daemon=True).start()
        self.next_id = 1000

    def _read(self):
        out = self.p.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.replies.put(None)
                    return
                if not line.strip():
                    break
                k, _, v = line.decode().partition(":")
                if k.lower() == "content-length":
                    length = int(v)
            self.replies.put(json.loads(out.read(length)))

    def send_bytes(self, data: bytes) -> None:
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        self.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, method: str, params, msg_id=None) -> int:
        msg_id = self.next_id if msg_id is None else msg_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def notify(self, method: str, params) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait(self, pred) -> dict:
        """The first message (reply or notification) for which pred holds; the others are kept for a
        later wait (a notification may come before or after a reply: the server lints in a thread)."""
        backlog = self.__dict__.setdefault("backlog", [])
        for i, m in enumerate(backlog):
            if pred(m):
                return backlog.pop(i)
        while True:
            try:
                m = self.replies.get(timeout=GUARD)
            except queue.Empty:
                pytest.fail(f"the server stopped answering; stderr:\n{b''.join(self.err)[-3000:].decode()}")
            assert m is not None, f"the server exited; stderr:\n{b''.join(self.err)[-3000:].decode()}"
            if pred(m):
                return m
            backlog.append(m)

    def reply(self, msg_id) -> dict:
        return self.wait(lambda m: m.get("id") == msg_id and "method" not in m)

    def error_reply(self) -> dict:
        return self.wait(lambda m: "error" in m and m.get("id") is None)

    def initialize(self, root: Path) -> None:
        r = self.reply(self.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}))
        assert "result" in r
        self.notify("initialized", {})

    def alive(self) -> None:
        """A well-formed request is still answered."""
        r = self.reply(self.request("shutdown", None) if False else self.request("textDocument/hover", {
            "textDocument": {"uri": "file:///nowhere/x.fair"}, "position": {"line": 0, "character": 0}}))
        assert "result" in r or "error" in r

    def close(self) -> None:
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=GUARD)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()

    def stderr(self) -> str:
        return b"".join(self.err).decode(errors="replace")


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "fairspec.toml").write_text("")
    return root


@pytest.fixture
def raw(project):
    r = Raw(project)
    yield r
    r.close()


def _no_traceback(m: dict) -> None:
    assert "traceback" not in json.dumps(m).lower(), m
    assert "data" not in m.get("error", {}), m


def test_request_before_initialize_is_32002_without_a_traceback(raw, project):
    r = raw.reply(raw.request("textDocument/hover", {"textDocument": {"uri": (project / "a.fair").as_uri()},
                                                    "position": {"line": 0, "character": 0}}))
    assert r["error"]["code"] == -32002
    _no_traceback(r)
    raw.notify("textDocument/didOpen", {"textDocument": {"uri": (project / "a.fair").as_uri(), "languageId": "fairspec",
                                                         "version": 1, "text": "model m = rule(x >= 1)\n"}})
    raw.initialize(project)  # still works afterwards
    raw.alive()


@pytest.mark.parametrize("frame", [
    b"Content-Length: abc\r\n\r\n{\"jsonrpc\": \"2.0\", \"method\": \"x\"}",
    b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{\"jsonrpc\": \"2.0\", \"method\": \"x\"}",
    b"Content-Length: 1e12\r\n\r\n{}",
    b"Content-Length: -5\r\n\r\n{}",
    b"Content-Length: 1000000000000\r\n\r\n{}",
    b"Content-Length: 99999999999999999999999999999999\r\n\r\n{}",
    b"no colon here\r\n\r\n",
    b"X" * 100_000 + b"\r\n\r\n",
], ids=["abc", "missing", "1e12", "negative", "huge", "overflow", "no-colon", "long-line"])
def test_broken_framing_is_answered_and_the_server_resynchronises(raw, project, frame):
    raw.initialize(project)
    raw.send_bytes(frame)
    e = raw.error_reply()
    assert e["error"]["code"] in (-32700, -32600)
    _no_traceback(e)
    raw.alive()  # the next well-formed message, glued to the broken one or not, is answered
    raw.send_bytes(frame)
    raw.error_reply()
    raw.alive()
    assert raw.p.poll() is None and "MemoryError" not in raw.stderr()


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"\"a string\"", b"{\"jsonrpc\": \"1.0\", \"id\": 1}"],
                         ids=["not-json", "batch", "string", "old-jsonrpc"])
def test_a_body_that_is_not_a_request_is_answered(raw, project, body):
    raw.initialize(project)
    raw.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    e = raw.wait(lambda m: "error" in m)
    assert e["error"]["code"] in (-32700, -32600)
    _no_traceback(e)
    raw.alive()


@pytest.mark.parametrize("params", [
    {"textDocument": {"uri": "URI"}, "position": {"line": -1, "character": 0}},
    {"textDocument": {"uri": "URI"}, "position": {"line": 0, "character": -3}},
    {"textDocument": {"uri": 5}, "position": {"line": 0, "character": 0}},
    {"textDocument": {"uri": "URI"}, "position": {"line": "zero", "character": 0}},
    {"textDocument": "URI"},
    "a string",
    None,
], ids=["line-1", "char-3", "uri-number", "line-string", "no-position", "params-string", "params-null"])
@pytest.mark.parametrize("method", ["textDocument/hover", "textDocument/definition", "textDocument/completion"])
def test_wrongly_typed_params_get_an_error_response(raw, project, method, params):
    raw.initialize(project)
    uri = (project / "a.fair").as_uri()
    raw.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "fairspec", "version": 1,
                                                         "text": "model m = rule(x >= 1)\n"}})
    params = json.loads(json.dumps(params).replace("URI", uri))
    r = raw.reply(raw.request(method, params))
    assert r["error"]["code"] == -32602, r
    _no_traceback(r)
    raw.alive()


def test_a_5_mb_document_does_not_block_later_requests(raw, project):
    raw.initialize(project)
    big = project / "big.fair"
    line = "group g{} = x >= {}\n"
    text = "".join(line.format(i, i) for i in range(260_000))
    assert len(text) > 5_000_000
    big_uri = big.as_uri()
    raw.notify("textDocument/didOpen", {"textDocument": {"uri": big_uri, "languageId": "fairspec", "version": 1,
                                                         "text": text}})
    small = project / "small.fair"
    small.write_text("model m = rule(x >= 1)\n")
    raw.notify("textDocument/didOpen", {"textDocument": {"uri": small.as_uri(), "languageId": "fairspec",
                                                         "version": 1, "text": small.read_text()}})
    r = raw.reply(raw.request("textDocument/hover", {"textDocument": {"uri": small.as_uri()},
                                                    "position": {"line": 0, "character": 6}}))
    assert "result" in r
    d = raw.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == big_uri)
    (diag,) = d["params"]["diagnostics"]
    assert diag["code"] == "FS106" and "fairspec lint" in diag["message"]
    for method in ("textDocument/hover", "textDocument/definition", "textDocument/documentSymbol",
                   "textDocument/formatting", "textDocument/completion"):
        params = {"textDocument": {"uri": big_uri}, "position": {"line": 3, "character": 7},
                  "options": {"tabSize": 2, "insertSpaces": True}}
        if method == "textDocument/documentSymbol":
            params = {"textDocument": {"uri": big_uri}}
        r = raw.reply(raw.request(method, params))
        assert "result" in r or "error" in r
    raw.alive()


def test_definition_never_answers_a_location_outside_the_project(raw, project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "other.fair").write_text("group far = x >= 1\n")
    (project / "inside.fair").write_text("group near = x >= 1\n")
    (project / "link.fair").symlink_to(outside / "other.fair")
    text = ('import "../outside/other.fair"\nimport "link.fair"\nimport "' + str(outside / "other.fair") + '"\n'
            'import "inside.fair"\n')
    spec = project / "spec.fair"
    spec.write_text(text)
    raw.initialize(project)
    uri = spec.as_uri()
    raw.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "fairspec", "version": 1,
                                                         "text": text}})
    raw.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
    for line in range(3):
        r = raw.reply(raw.request("textDocument/definition", {"textDocument": {"uri": uri},
                                                             "position": {"line": line, "character": 10}}))
        assert r.get("result") is None, (line, r)
    r = raw.reply(raw.request("textDocument/definition", {"textDocument": {"uri": uri},
                                                         "position": {"line": 3, "character": 10}}))
    assert r["result"]["uri"] == (project / "inside.fair").resolve().as_uri()


def test_exit_ends_the_server_while_its_stdin_stays_open(raw, project):
    raw.initialize(project)
    raw.reply(raw.request("shutdown", None))
    raw.notify("exit", None)
    raw.p.wait(timeout=GUARD)  # stdin is still open: the reader thread must not hold the exit
    assert raw.p.returncode == 0


def test_the_servers_limit_is_lints():
    from fairspec.lsp import indexes
    from fairspec.syntax import parser

    assert indexes.MAX_SPEC_BYTES == parser.MAX_SPEC_BYTES


def test_exit_without_shutdown_is_status_1(raw, project):
    raw.initialize(project)
    raw.notify("exit", None)
    raw.p.wait(timeout=GUARD)
    assert raw.p.returncode == 1  # the protocol's: exit without shutdown


def test_the_end_of_stdin_without_shutdown_is_status_1(raw, project):
    raw.initialize(project)
    raw.close()
    assert raw.p.returncode == 1


def test_requests_after_shutdown_are_answered_invalid_request(raw, project):
    raw.initialize(project)
    assert "result" in raw.reply(raw.request("shutdown", None))
    for method, params in [("textDocument/hover", {"textDocument": {"uri": (project / "a.fair").as_uri()},
                                                  "position": {"line": 0, "character": 0}}), ("shutdown", None)]:
        r = raw.reply(raw.request(method, params))
        assert r["error"]["code"] == -32600, r
    raw.notify("exit", None)
    raw.p.wait(timeout=GUARD)
    assert raw.p.returncode == 0


@pytest.mark.parametrize("msg, code", [
    ({"jsonrpc": "2.0", "id": 507, "method": "textDocument/didClose",
      "params": {"textDocument": {"uri": "file:///nowhere/x.fair"}}}, -32600),
    ({"jsonrpc": "2.0", "id": True, "method": "textDocument/hover",
      "params": {"textDocument": {"uri": "file:///nowhere/x.fair"}, "position": {"line": 0, "character": 0}}}, -32600),
    ({"jsonrpc": "2.0", "id": 508, "method": "fairspec/noSuchThing"}, -32601),
], ids=["notification-with-id", "id-true", "unknown-method-without-params"])
def test_a_request_that_is_not_one_is_answered(raw, project, msg, code):
    raw.initialize(project)
    raw.send(msg)
    r = raw.wait(lambda m: "error" in m)
    assert r["error"]["code"] == code, r
    assert "__init__" not in r["error"]["message"]
    _no_traceback(r)
    raw.alive()


def _hover(msg_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": "file:///nowhere/x.fair"}, "position": {"line": 0, "character": 0}}}).encode()


def test_a_short_content_length_does_not_lose_the_next_message(raw, project):
    raw.initialize(project)
    body, after = _hover(900), _hover(901)
    raw.send_bytes(b"Content-Length: 10\r\n\r\n" + body + b"Content-Length: %d\r\n\r\n" % len(after) + after)
    assert raw.error_reply()["error"]["code"] == -32700
    assert "result" in raw.reply(901)


def test_two_content_lengths_that_disagree_are_refused(raw, project):
    raw.initialize(project)
    body, after = _hover(902), _hover(903)
    raw.send_bytes(b"Content-Length: 2\r\nContent-Length: %d\r\n\r\n" % len(body) + body
                   + b"Content-Length: %d\r\n\r\n" % len(after) + after)
    assert raw.error_reply()["error"]["code"] == -32700
    assert "result" in raw.reply(903)
    assert not [m for m in raw.__dict__.get("backlog", []) if m.get("id") == 902]


def test_the_document_limit_counts_utf8_bytes(project):
    r = Raw(project, env={"FAIRSPEC_LSP_MAX_DOCUMENT": "200"})
    try:
        r.initialize(project)
        uri = (project / "accents.fair").as_uri()
        text = "# " + "é" * 120 + "\n"  # 123 characters, 243 bytes
        r.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "fairspec", "version": 1,
                                                           "text": text}})
        d = r.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
        (diag,) = d["params"]["diagnostics"]
        assert diag["code"] == "FS106" and "243 bytes" in diag["message"] and "200 bytes" in diag["message"]
    finally:
        r.close()
