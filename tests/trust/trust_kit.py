"""Hostile inputs for tests/trust: a set of hostile lines, and tiny hostile HTTP servers on 127.0.0.1.

The lines are what a server, a Prometheus label or a log can carry to get a terminal to do something:
escape sequences in 7-bit and 8-bit form (OSC 52 writes the clipboard, OSC 0 the title), Rich markup
(`[/x]` crashed `spectui fleet` with MarkupError), C0/C1 controls, bidi overrides, lone surrogates.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOSTILE_LINES = [
    "\x1b]52;c;aGVsbG8gY2xpcGJvYXJk\x07clip",        # OSC 52: write the clipboard
    "\x1b]0;pwned title\x07title",                   # OSC 0: window title
    "\x1b]8;;http://evil.test/\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x9b2J\x9d0;c1 title\x9c8bit",                 # 8-bit CSI, 8-bit OSC ended by 8-bit ST
    "\x1bP+q544e\x1b\\dcs",                          # DCS (XTGETTCAP)
    "\x1b[31mred\x1b[0m\x1b[2J\x1b[H",              # SGR, erase, home
    "[/x]",                                         # a closing tag with no opening: MarkupError
    "[bold red]markup[/bold red] [link=http://evil.test]l[/link]",
    "[/]",
    "\\[escaped] [@click=app.quit]q[/]",
    "nul\x00bell\x07bs\x08cr\rlf\nvt\x0bff\x0cdel\x7f",
    "nel\x85 csi\x9b ss2\x8e",
    "\u202egnp.exe\u202c \u2066iso\u2069 \u200fRLM \u061cALM \ufeffBOM \u2028LS",
    "surrogate \udcff\udc80 end",
    "A" * 5000,
]

#: Characters no terminal output may carry raw (ESC, C0 but tab/newline, DEL, C1, bidi, lone surrogates).
FORBIDDEN = set(map(chr, [*range(0, 9), *range(11, 32), *range(0x7F, 0xA0)])) | set(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029\ufeff"
) | {chr(c) for c in range(0xD800, 0xE000)}


def forbidden_in(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in text if c in FORBIDDEN})


Handler = Callable[[BaseHTTPRequestHandler], None]


@contextlib.contextmanager
def http_server(handle: Handler) -> Iterator[str]:
    """A threaded HTTP server on 127.0.0.1 whose every GET is answered by `handle(request_handler)`;
    yields its base URL. Stopped (and its connections dropped) on exit."""

    class _H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802
            with contextlib.suppress(OSError):
                handle(self)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def send(h: BaseHTTPRequestHandler, body: bytes, status: int = 200, ctype: str = "application/json") -> None:
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


# ---------------------------------------------------------------------------------------------- bundles

def _octal(n: int, width: int) -> bytes:
    return (b"%0*o" % (width - 1, n)) + b"\0"


def tar_entry(name: str, data: bytes = b"", *, declared: int | None = None) -> bytes:
    """One tar entry (header + data padded to 512); `declared` overrides the size in the header."""
    import tarfile

    info = tarfile.TarInfo(name)
    info.size = len(data) if declared is None else declared
    body = data + b"\0" * (-len(data) % 512)
    return info.tobuf(tarfile.GNU_FORMAT) + body


def sparse_entry(name: str, real_size: int) -> bytes:
    """An old-GNU sparse entry ('S'): no data stored, `real_size` bytes of zeros when extracted."""
    import tarfile

    info = tarfile.TarInfo(name)
    info.type = tarfile.GNUTYPE_SPARSE
    info.size = 0
    buf = bytearray(info.tobuf(tarfile.GNU_FORMAT))
    buf[386:398] = _octal(real_size - 1, 12)  # one map entry: 0 bytes at the very end
    buf[398:410] = _octal(0, 12)
    buf[483:495] = _octal(real_size, 12)  # realsize
    buf[148:156] = b" " * 8
    buf[148:156] = b"%06o\0 " % sum(buf[:512])
    return bytes(buf)


def manifest_bytes(members: list[tuple[str, int]], **extra: object) -> bytes:
    import json

    obj = {"format": "spectui-bundle", "format_version": 1, "spectui_version": "0.1.0",
           "members": [{"name": n, "size": s, "sha256": "0" * 64} for n, s in members], **extra}
    return json.dumps(obj).encode()


END_OF_TAR = b"\0" * 1024
