"""The HTTP side of the embedded API server: requests in, replies, streams and exec out.

A stdlib ``ThreadingHTTPServer`` (one thread per connection) starts in well under a
millisecond. ``Handler`` reads a request, asks the ``ApiServer`` for a ``Reply`` and writes
it: one JSON document, a chunked stream (watches, ``logs -f``), or, for ``kubectl exec``,
a WebSocket speaking ``v5.channel.k8s.io`` (framed by ``wsproto``). Protobuf bodies of
access reviews are decoded to JSON first; other encodings get 415 so clients use JSON.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import ssl
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from wsproto.connection import Connection as WsConnection
from wsproto.connection import ConnectionType
from wsproto.events import BytesMessage, CloseConnection
from wsproto.utilities import generate_accept_token

from netarena.k8s.apiserver.kinds import ApiError, BadRequest
from netarena.k8s.apiserver.protobuf import decode_review

if TYPE_CHECKING:
    from netarena.k8s.apiserver.podruntime import ExecResult

__all__ = ["PATCH_TYPES", "Api", "HttpServer", "Handler", "MethodNotAllowed", "Reply",
           "UnsupportedMediaType"]

logger = logging.getLogger(__name__)

PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}


class MethodNotAllowed(ApiError):
    """The verb is not served on this path."""

    code = 405
    reason = "MethodNotAllowed"


class Unauthorized(ApiError):
    """The request's credentials are wrong (kubectl: "You must be logged in to the server")."""

    code = 401
    reason = "Unauthorized"


_PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})
"""What an API server answers without credentials (``system:public-info-viewer``)."""


class UnsupportedMediaType(ApiError):
    """The body's encoding is not understood."""

    code = 415
    reason = "UnsupportedMediaType"


class Reply:
    """A response body with its status code and content type."""

    def __init__(self, body: Any, code: int = 200, content_type: str = "application/json",
                 headers: dict[str, str] | None = None,
                 stream: Iterator[Any] | None = None) -> None:
        self.body = body
        self.code = code
        self.content_type = content_type
        self.headers = headers or {}
        self.stream = stream
        """Documents sent one per chunk after the headers (a watch), instead of ``body``."""
        self.client_gone: list[Callable[[], bool]] = []
        """Set by the HTTP layer: tells a stream's producer that its reader left."""


class Handler(BaseHTTPRequestHandler):
    """One connection's requests."""

    protocol_version = "HTTP/1.1"
    server: HttpServer
    _headers_buffer: list[bytes]  # BaseHTTPRequestHandler's, missing from its stubs

    def setup(self) -> None:
        """Turn off Nagle's algorithm; with TLS, shake hands (in this connection's thread)."""
        # Headers and body go out in one write, and without Nagle's delay: otherwise
        # the delayed-ACK interplay adds ~40 ms to every small response.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.server.tls is not None:
            self.request = self.server.tls.wrap_socket(self.request, server_side=True)
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Requests go to the debug log, not to stderr."""
        logger.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:  # noqa: N802
        """Serve a GET request."""
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        """Serve a POST request."""
        self._serve("POST")

    def do_PUT(self) -> None:  # noqa: N802
        """Serve a PUT request."""
        self._serve("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        """Serve a PATCH request."""
        self._serve("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        """Serve a DELETE request."""
        self._serve("DELETE")

    def _authenticated(self) -> bool:
        token = self.server.api.token
        given = self.headers.get("Authorization")
        if token is None or given == f"Bearer {token}":
            return True
        return given is None and urlsplit(self.path).path.rstrip("/") in _PUBLIC_PATHS

    def _serve(self, method: str) -> None:
        if not self._authenticated():
            self.close_connection = True
            self._send(Reply(Unauthorized("Unauthorized").status(), 401))
            return
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if ctype == _PROTOBUF and "/selfsubject" in self.path:
            raw = json.dumps(decode_review(raw, _review_kind(self.path))).encode()
        elif raw and ctype not in ("", "application/json", "application/yaml", *PATCH_TYPES,
                                   "application/apply-patch+yaml"):
            # Protobuf and CBOR clients fall back to JSON on 415, as with API servers
            # that do not speak their encoding.
            self._send(Reply(UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json, application/yaml").status(), 415))
            return
        if (self.headers.get("Upgrade") or "").lower() == "websocket":
            try:
                self._websocket(method)
            except ApiError as exc:
                self._send(Reply(exc.status(), exc.code))
            return
        try:
            reply = self.server.api.handle(method, self.path, dict(self.headers.items()), raw)
        except ApiError as exc:
            reply = Reply(exc.status(), exc.code)
        except Exception as exc:  # noqa: BLE001 - a server bug must answer 500, not hang kubectl
            logger.exception("embedded API failed on %s %s: %s", method, self.path, exc)
            reply = Reply(ApiError("Internal error occurred: the server could not complete "
                                   "the request").status(), 500)
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        if reply.stream is not None:
            self._stream(reply)
            return
        data = (reply.body.encode() if isinstance(reply.body, str)
                else json.dumps(reply.body).encode())
        self.send_response(reply.code)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self._headers_buffer.append(b"\r\n")
        self.wfile.write(b"".join(self._headers_buffer) + data)
        self._headers_buffer = []


    def _stream(self, reply: Reply) -> None:
        """Chunked transfer of one JSON document (or text line) per item, until it ends."""
        assert reply.stream is not None
        self.send_response(reply.code)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        connection = self.connection

        def gone() -> bool:  # peeks below TLS: only the peer's FIN or reset matters here
            readable, _, _ = select.select([connection], [], [], 0)
            if not readable:
                return False
            try:
                return not socket.socket.recv(connection, 1, socket.MSG_PEEK)
            except OSError:
                return True

        reply.client_gone.append(gone)
        try:
            for item in reply.stream:
                data = (item if isinstance(item, str) else json.dumps(item) + "\n").encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            logger.debug("watch client went away")

    def _websocket(self, method: str) -> None:
        """``kubectl exec`` over ``v5.channel.k8s.io``/``v4.channel.k8s.io`` WebSockets."""
        offered = [p.strip() for p in (self.headers.get("Sec-WebSocket-Protocol") or "")
                   .split(",")]
        protocol = next((p for p in _EXEC_PROTOCOLS if p in offered), None)
        key = self.headers.get("Sec-WebSocket-Key")
        if protocol is None or key is None or method not in ("GET", "POST"):
            raise BadRequest("unable to upgrade: no supported streaming protocol was offered")
        pod, command = self.server.api.exec_target(self.path)
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", generate_accept_token(key.encode()).decode())
        self.send_header("Sec-WebSocket-Protocol", protocol)
        self.end_headers()
        self.wfile.flush()
        result = self.server.api.run_exec(pod, command)
        ws = WsConnection(ConnectionType.SERVER)
        out = b""
        if result.exit_code == -1:  # the process never started: the runtime's error
            status = {"metadata": {}, "status": "Failure", "message": result.stderr,
                      "reason": "InternalError", "code": 500,
                      "details": {"causes": [{"message": result.stderr}]}}
            out += ws.send(BytesMessage(data=b"\x03" + json.dumps(status).encode()))
        else:
            for channel, text in ((1, result.stdout), (2, result.stderr)):
                if text:
                    out += ws.send(BytesMessage(data=bytes([channel]) + text.encode()))
            out += ws.send(BytesMessage(data=b"\x03" + json.dumps(_exit_status(
                command, result.exit_code)).encode()))
        out += ws.send(CloseConnection(code=1000))
        self.wfile.write(out)
        self.wfile.flush()
        self.close_connection = True


_EXEC_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
_PROTOBUF = "application/vnd.kubernetes.protobuf"


def _review_kind(path: str) -> str:
    plural = urlsplit(path).path.rstrip("/").rsplit("/", 1)[-1]
    return {"selfsubjectaccessreviews": "SelfSubjectAccessReview",
            "selfsubjectrulesreviews": "SelfSubjectRulesReview"}.get(plural, "SelfSubjectReview")


def _exit_status(command: list[str], code: int) -> dict[str, Any]:
    """The ``Status`` an exec stream ends with (kubectl turns it into its exit code)."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"{command}, exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


class Api(Protocol):
    """What the HTTP side asks of the API server (``server.ApiServer``)."""

    token: str | None
    """The bearer token every request must carry (``None``: no authentication)."""

    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        """Answer one request."""
        ...

    def exec_target(self, path: str) -> tuple[dict[str, Any], list[str]]:
        """The pod and command of an exec request."""
        ...

    def run_exec(self, pod: dict[str, Any], command: list[str]) -> ExecResult:
        """Run ``command`` in ``pod``."""
        ...


class HttpServer(ThreadingHTTPServer):
    """The listening socket; ``api`` answers its requests."""

    daemon_threads = True
    allow_reuse_address = True
    api: Api
    tls: ssl.SSLContext | None = None
    """Set for HTTPS: each connection is wrapped in its handler's thread."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that leaves mid-handshake or mid-stream is routine: log, don't print."""
        logger.debug("connection from %s ended with an error", client_address, exc_info=True)


