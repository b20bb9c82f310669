"""The stdio transport of `fairspec lsp` (fairspec/lsp/server.py): LSP base-protocol frames read and
checked before pygls sees them, and the message loop.

* :class:`FrameReader` reads frames, every length checked before it is used; a missing, malformed,
  conflicting or oversized ``Content-Length`` and a header line that is not ``Name: value`` are a
  :class:`FrameError`, after which the reader resynchronises on the next ``Content-Length`` header
  (also one inside the broken line: a body without a line end runs into the next frame's header);
* :func:`dispatch` answers what pygls would drop or answer wrongly: a request before ``initialize``
  (-32002) or after ``shutdown`` (-32600), an id that is not a number or a string (``true`` included),
  a request for a notification's method (-32600), an unknown method (-32601) and wrongly typed params
  (-32602), never with a traceback;
* :func:`serve` reads frames in a daemon thread and handles them in the event loop's thread;
* :class:`AnsweredErrors` keeps the server's log (stderr, an editor's output panel) free of the traceback
  pygls logs for every request it answers with an error (a refused rename, params that do not validate).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading

from lsprotocol import types as T

log = logging.getLogger("fairspec.lsp")


class AnsweredErrors(logging.Filter):
    """pygls logs a traceback for each request it answers with an error response: a rename the server
    refuses (``'sex' is already declared``, a keyword), params that do not validate (a negative line).
    The client has its answer; the log gets one line. An unexpected exception keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("pygls"):
            return True
        exc = record.exc_info[1] if record.exc_info else None
        from pygls.exceptions import JsonRpcException, JsonRpcInternalError

        if isinstance(exc, JsonRpcException) and not isinstance(exc, JsonRpcInternalError):
            said = str(exc).splitlines()[0][:200] if str(exc) else ""
            record.msg, record.args = f"{record.getMessage()}: answered {type(exc).__name__}: {said}", ()
            record.exc_info = record.exc_text = None
            return True
        text = record.getMessage()
        if text.startswith("Unable to deserialize message") and "ClassValidationError" in text:
            why = [m.group(1) for m in _RAISED.finditer(text) if "ClassValidationError" not in m.group(1)]
            record.msg, record.args = f"invalid params, answered -32602: {why[-1] if why else 'see the reply'}", ()
        return True


_RAISED = re.compile(r"^[\s|+]*(\w*(?:Error|Exception): .+)$", re.M)

MAX_MESSAGE = 64 << 20   # bytes of one message (a 5 MB document's didOpen is about 5 MB)
MAX_HEADER_LINE = 8192   # bytes of one header line
IN_FLIGHT = 16           # messages read ahead of the one being handled


_CONTENT_LENGTH = re.compile(rb"content-length\s*:", re.I)
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a header's name (RFC 9110's token)


class FrameError(Exception):
    """A message that cannot be read: (JSON-RPC code, message); the reader resynchronises."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class FrameReader:
    """LSP base-protocol frames from a binary stream, every length checked before it is used.

    ``read()`` returns a message's body (bytes), None at the end of the stream, or raises
    :class:`FrameError` for a frame it cannot read; the next ``read()`` then skips to the next
    line holding a ``Content-Length`` header (also in the middle of a line: a body has no newline
    at its end, so the next header follows it on the same line). A header line that is not
    ``Name: value`` (the tail of a body whose ``Content-Length`` was too short, glued to the next
    frame's header) resynchronises from the ``Content-Length`` inside it, so that frame is read."""

    def __init__(self, stream, max_message: int = MAX_MESSAGE):
        self.stream = stream
        self.max_message = max_message
        self.resync = False
        self.carry = b""  # the start of a header found inside a line while resynchronising

    def _line(self) -> bytes:
        if self.carry:
            line, self.carry = self.carry, b""
            return line
        return self.stream.readline(MAX_HEADER_LINE + 1)

    def read(self) -> bytes | None:
        length = None
        seen = False
        while True:
            line = self._line()
            if not line:
                return None
            if self.resync:
                m = _CONTENT_LENGTH.search(line)
                if m is None:
                    continue  # still in the broken frame's body
                line, self.resync = line[m.start():], False
            if len(line) > MAX_HEADER_LINE or not line.endswith(b"\n"):
                self.resync = True
                raise FrameError(-32700, f"a header line is longer than {MAX_HEADER_LINE} bytes")
            if not line.strip():
                if not seen:
                    continue  # blank lines between frames
                break
            seen = True
            name, sep, value = line.partition(b":")
            if not sep or not _TOKEN.fullmatch(name.strip()):
                self.resync = True
                m = _CONTENT_LENGTH.search(line)
                if m is not None:  # a header begins inside the line: read on from it
                    self.carry = line[m.start():]
                raise FrameError(-32700, f"malformed header line {line[:80]!r}")
            if name.strip().lower() == b"content-length":
                v = value.strip()
                got = int(v) if v.isdigit() and len(v) <= 18 else -1
                if length is not None and got != length:
                    self.resync = True
                    raise FrameError(-32700, "two Content-Length headers that disagree")
                length = got
        if length is None:
            self.resync = True
            raise FrameError(-32700, "a message without a Content-Length header")
        if length < 0:
            self.resync = True
            raise FrameError(-32700, "the Content-Length header is not a whole number of bytes")
        if length > self.max_message:
            self.resync = True
            raise FrameError(-32600, f"a message of {length} bytes is over the server's limit of "
                                     f"{self.max_message} bytes")
        body = self.stream.read(length)
        if len(body) < length:
            return None  # the stream ended inside the body
        return body


def _error(protocol, msg_id, code: int, message: str) -> None:
    protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


def _is_notification(method: str) -> bool:
    """An LSP method that is a notification (its message has no id)."""
    types = T.METHOD_TO_TYPES.get(method)
    return types is not None and types[1] is None  # (message, response, params, options): no response


def dispatch(ls, body: bytes) -> None:
    """One message: checked, then handed to pygls (in the event loop's thread)."""
    protocol = ls.protocol
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError) as e:
        _error(protocol, None, -32700, f"Parse error: the message is not JSON ({type(e).__name__})")
        return
    if not isinstance(raw, dict) or raw.get("jsonrpc") != "2.0":
        _error(protocol, raw.get("id") if isinstance(raw, dict) else None, -32600,
               "Invalid Request: not a JSON-RPC 2.0 message object")
        return
    msg_id = raw.get("id")
    method = raw.get("method")
    is_request = "method" in raw and "id" in raw
    if "method" in raw and not isinstance(method, str):
        if is_request:
            _error(protocol, msg_id, -32600, "Invalid Request: the method is not a string")
        return
    if is_request and (not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool)):
        _error(protocol, None, -32600, "Invalid Request: the id is not a number or a string")
        return
    if method is not None and not ls.initialized and method not in ("initialize", "exit"):
        if is_request:
            _error(protocol, msg_id, -32002, f"Server not initialized: {method} before initialize")
        return  # a notification before initialize is dropped (the protocol says so)
    if is_request and _is_notification(method):
        _error(protocol, msg_id, -32600, f"Invalid Request: {method} is a notification (it takes no id)")
        return
    if is_request and ls.shut_down:  # pygls would drop it unanswered
        _error(protocol, msg_id, -32600, f"Invalid Request: {method} after shutdown")
        return
    try:
        message = protocol.structure_message(raw)
    except Exception as e:  # noqa: BLE001 - wrongly typed params: an error response, never a dead request
        if is_request and method not in protocol.fm.features and method not in protocol.fm.builtin_features:
            _error(protocol, msg_id, -32601, f"Method not found: {method}")
        elif is_request:
            why = str(getattr(e, "__cause__", None) or e) or type(e).__name__
            _error(protocol, msg_id, -32602, f"Invalid params for {method}: {why.splitlines()[0][:200]}")
        else:
            log.warning("dropped a notification %r with invalid params", method)
        return
    if method == "initialize":
        ls.initialized = True
    protocol.handle_message(message)


async def serve(ls, stdin, stop: threading.Event) -> None:
    """Frames are read by a daemon thread (a blocked read of stdin never delays the exit) and
    handled here, in the event loop's thread, one at a time; at most IN_FLIGHT read ahead."""
    loop = asyncio.get_running_loop()
    ls._loop = loop
    frames: asyncio.Queue = asyncio.Queue()
    room = threading.Semaphore(IN_FLIGHT)

    def pump() -> None:
        reader = FrameReader(stdin)
        while True:
            room.acquire()
            try:
                item = reader.read()
            except FrameError as e:
                item = e
            except (OSError, ValueError):  # stdin closed under us
                item = None
            try:
                loop.call_soon_threadsafe(frames.put_nowait, item)
            except RuntimeError:  # the loop is closed: the server is exiting
                return
            if item is None:
                return

    threading.Thread(target=pump, daemon=True, name="fairspec-lsp-reader").start()
    while not stop.is_set():
        item = await frames.get()
        room.release()
        if item is None:
            break
        if isinstance(item, FrameError):
            _error(ls.protocol, None, item.code, str(item))
            continue
        try:
            dispatch(ls, item)
        except Exception:  # noqa: BLE001 - one bad message never ends the server
            log.exception("could not handle a message")
        except BaseException:  # `exit` (SystemExit): lints still ending send nothing from here on
            ls.exiting = True
            raise


