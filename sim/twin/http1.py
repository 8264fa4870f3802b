"""HTTP/1.1 as the twin reads it: bounded request lines, headers and bodies, one write per answer.

The standard library's ``http.server`` reads a body by a ``Content-Length`` it passes to
``int()`` (``1.5`` and ``abc`` end in a traceback, ``١٢`` is read as 12), knows no chunked
body (its bytes are read as the next request), cuts nothing it cannot hold and writes the
status line, headers and body in separate writes (with Nagle's algorithm on, 40 ms a
request on a reused connection). Here each limit is a number with the status HTTP gives
past it (RFC 9110: 413, 414, 431; RFC 9112: 400 for a framing it cannot trust, 501 for a
transfer coding it does not know), and an answer is one ``bytes`` written once.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from http import HTTPStatus

__all__ = [
    "MAX_BODY",
    "MAX_HEADERS",
    "MAX_HEAD_BYTES",
    "MAX_TARGET",
    "Head",
    "Refused",
    "read_body",
    "read_head",
    "response",
]

#: Not public: assumed. The largest machine config fly-go sends is a few KiB; 1 MiB is
#: the bound the twin had before (now refused with 413 rather than cut).
MAX_BODY = 1 << 20
#: The request line (method, target, version); longer: 414 URI Too Long.
MAX_TARGET = 8 << 10
#: The whole header block, and the number of header lines; past either: 431.
MAX_HEAD_BYTES = 64 << 10
MAX_HEADERS = 100
#: A chunk-size line (size, extensions): generous for ``;ext=value`` and nothing more.
_MAX_CHUNK_LINE = 1 << 10
#: RFC 9110 token characters: what a method and a header name may hold.
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: A request target as it goes on the wire: visible ASCII only (percent-encoded beyond).
_TARGET = re.compile(rb"/[\x21-\x7e]*")
_VERSION = re.compile(rb"HTTP/1\.[01]")
_DIGITS = re.compile(r"[0-9]+")  # ASCII only: ``str.isdigit`` takes ``١`` and ``²``
_HEX = re.compile(rb"[0-9A-Fa-f]+")
_FIELD_VALUE_BAD = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")


class Refused(Exception):
    """A request the connection cannot go on after: its status and ``{"error": ...}`` text."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class Head:
    """A request's line and headers (names lower-cased, values latin-1 as HTTP defines them)."""

    method: str
    target: str
    version: str
    headers: dict[str, list[str]]

    def header(self, name: str) -> str | None:
        """The last value of header ``name`` (lower case), or None."""
        values = self.headers.get(name)
        return values[-1] if values else None

    @property
    def keep_alive(self) -> bool:
        """Whether the client keeps the connection for another request (RFC 9112 9.3)."""
        tokens = {t.strip().lower() for v in self.headers.get("connection", ()) for t in v.split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


async def _line(reader: asyncio.StreamReader, limit: int, status: int, what: str) -> bytes:
    """One line (its CRLF or bare LF removed); ``Refused(status)`` past ``limit`` bytes."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError:
        raise Refused(status, f"{what} is longer than {limit} bytes") from None
    if len(line) > limit:
        raise Refused(status, f"{what} is longer than {limit} bytes")
    return line.rstrip(b"\n").removesuffix(b"\r")


async def read_head(reader: asyncio.StreamReader) -> Head | None:
    """The next request's line and headers; None if the client closed before sending one.

    ``reader``'s limit must be at least ``MAX_HEAD_BYTES`` (a longer line is refused).
    """
    try:
        line = b""
        for _ in range(8):  # RFC 9112 2.2: empty lines before a request are ignored
            line = await _line(reader, MAX_TARGET, 414, "the request line")
            if line:
                break
        if not line:
            raise Refused(400, "no request line")
        head = _request_line(line)
        headers: dict[str, list[str]] = {}
        size = len(line)
        for count in range(MAX_HEADERS + 1):
            field = await _line(reader, MAX_HEAD_BYTES, 431, "a header line")
            size += len(field) + 2
            if size > MAX_HEAD_BYTES:
                raise Refused(431, f"the header block is longer than {MAX_HEAD_BYTES} bytes")
            if not field:
                return Head(*head, headers)
            if count == MAX_HEADERS:
                raise Refused(431, f"more than {MAX_HEADERS} header lines")
            name, value = _field(field)
            headers.setdefault(name, []).append(value)
        raise AssertionError("unreachable")  # pragma: no cover
    except asyncio.IncompleteReadError:
        return None  # the client went away before its request was whole: nothing to answer


def _request_line(line: bytes) -> tuple[str, str, str]:
    parts = line.split(b" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]):
        raise Refused(400, "a request line is METHOD SP /target SP HTTP/1.1")
    method, target, version = parts
    if not _VERSION.fullmatch(version):
        if re.fullmatch(rb"HTTP/[0-9]\.[0-9]", version):
            raise Refused(505, "only HTTP/1.0 and HTTP/1.1 are served")
        raise Refused(400, "a request line is METHOD SP /target SP HTTP/1.1")
    if not _TARGET.fullmatch(target):
        raise Refused(400, "the request target must be a path of visible ASCII (percent-encode the rest)")
    return method.decode("ascii"), target.decode("ascii"), version.decode("ascii")


def _field(line: bytes) -> tuple[str, str]:
    if line[:1] in (b" ", b"\t"):
        raise Refused(400, "a folded header line (obs-fold) is not accepted")
    name, colon, value = line.partition(b":")
    if not colon or not _TOKEN.fullmatch(name):
        raise Refused(400, "a header line is name: value, the name a token")
    value = value.strip(b" \t")
    if _FIELD_VALUE_BAD.search(value):
        raise Refused(400, "a header value holds a control character")
    return name.decode("ascii").lower(), value.decode("latin-1")


def content_length(head: Head) -> int | None:
    """The declared body length: every value the same ASCII digits, else ``Refused(400)``."""
    values = head.headers.get("content-length")
    if values is None:
        return None
    items = {item.strip() for value in values for item in value.split(",")}
    if len(items) != 1 or not _DIGITS.fullmatch(text := items.pop()):
        raise Refused(400, "Content-Length must be one decimal number of bytes")
    return int(text) if len(text) < 20 else MAX_BODY + 1


async def read_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: Head) -> bytes:
    """The request's body, whole: by its ``Content-Length`` or chunked, at most ``MAX_BODY`` bytes."""
    coding = [t.strip().lower() for v in head.headers.get("transfer-encoding", ()) for t in v.split(",")]
    length = content_length(head)
    if coding:
        if length is not None:
            # RFC 9112 6.3: both framings at once is how requests are smuggled.
            raise Refused(400, "a request with both Transfer-Encoding and Content-Length")
        if coding != ["chunked"]:
            raise Refused(501, "the only transfer coding served is chunked")
    elif length is None or length == 0:
        return b""
    elif length > MAX_BODY:
        raise Refused(413, f"the body is larger than {MAX_BODY} bytes")
    if (head.header("expect") or "").lower() == "100-continue":
        # curl asks before a body over 1 KiB and waits a second for this.
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    try:
        if not coding:
            assert length is not None
            return await reader.readexactly(length)
        return await _chunked(reader)
    except asyncio.IncompleteReadError:
        raise Refused(400, "the body ended before its declared length") from None


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        line = await _line(reader, _MAX_CHUNK_LINE, 400, "a chunk-size line")
        size_text = line.partition(b";")[0].strip(b" \t")
        if not _HEX.fullmatch(size_text):
            raise Refused(400, "a chunk size is hexadecimal digits")
        size = int(size_text, 16) if len(size_text) <= 8 else MAX_BODY + 1
        if len(body) + size > MAX_BODY:
            raise Refused(413, f"the body is larger than {MAX_BODY} bytes")
        if size == 0:
            break
        body += await reader.readexactly(size)
        if await reader.readexactly(2) != b"\r\n":
            raise Refused(400, "a chunk does not end in CRLF")
    for _ in range(MAX_HEADERS + 1):  # trailer fields, read and left
        if not await _line(reader, MAX_HEAD_BYTES, 431, "a trailer line"):
            return bytes(body)
    raise Refused(431, f"more than {MAX_HEADERS} trailer lines")


def response(status: int, body: bytes, headers: list[tuple[str, str]], *, head_only: bool = False) -> bytes:
    """The whole answer, status line to body, as the one buffer written."""
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Status"
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{name}: {value}" for name, value in headers),
             f"Content-Length: {len(body)}", "", ""]
    data = "\r\n".join(lines).encode("latin-1")
    return data if head_only else data + body
