"""watch --page: the live loop in a browser, served on 127.0.0.1 only, redrawn through Server-Sent Events.

A :class:`Watcher` loads the file at each save (and when the page asks for another context), as the terminal
watch does (:func:`handwired.views.watch.load_snapshot`), and publishes the page's document
(:func:`handwired.views.page.document`) on a :class:`Board`. The server (:func:`serve`, the standard library's
``http.server``) sends the page, its script and stylesheet, the document, and a stream of events that carries each
new document to every open page; nothing is fetched from anywhere else, so the page works offline.

Only this machine can reach it: the socket is bound to 127.0.0.1, and a request whose Host is not that address
(or ``localhost``) at this port is refused, so a web page elsewhere cannot reach it through a name it controls
(DNS rebinding); a request to change the context must come from the page itself (its Origin, when sent).
"""

import json
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import typer

from handwired.cli.common import EXIT_INTERRUPTED
from handwired.errors import HandwiredError
from handwired.views import page as paging
from handwired.views import watch as watching
from handwired.weightfile.axes import printable

HOST = "127.0.0.1"
POLL_SECONDS = 0.1  # how often the file's fingerprint is looked at, as the terminal watch does
KEEP_ALIVE_SECONDS = 15.0  # an event stream with nothing new sends a comment this often, to notice a closed page
MAX_CONTEXT_BODY = 65536  # bytes: a context the page asks for
TYPES = {"page.html": "text/html; charset=utf-8", "page.css": "text/css; charset=utf-8",
         "page.js": "text/javascript; charset=utf-8"}
# the page loads its own script and stylesheet and talks to this server only
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


class Board:
    """The latest document, numbered, and the pages waiting for the next one; and the context a page asked for."""

    def __init__(self, everything: bool = False) -> None:
        self.everything = everything  # the page starts with all-zero rows and columns shown (--all)
        self.changed = threading.Condition()
        self.version = 0
        self.body = b"{}"
        self.closed = False
        self.asked: str | None = None  # the context a page asked for; None: the default
        self.wake = threading.Event()  # set when the watcher should look again at once

    def publish(self, document: dict) -> int:
        with self.changed:
            self.version += 1
            self.body = json.dumps({**document, "version": self.version, "everything": self.everything},
                                   ensure_ascii=True).encode("ascii")
            self.changed.notify_all()
            return self.version

    def latest(self) -> tuple[int, bytes]:
        with self.changed:
            return self.version, self.body

    def after(self, version: int, timeout: float) -> tuple[int, bytes] | None:
        """The document once it is newer than ``version``; None after ``timeout`` seconds or once closed."""
        with self.changed:
            self.changed.wait_for(lambda: self.version > version or self.closed, timeout)
            return None if self.closed or self.version <= version else (self.version, self.body)

    def ask(self, text: str | None) -> None:
        self.asked = text
        self.wake.set()

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()
        self.wake.set()


class Watcher:
    """Loads the file at each save, or when a page asks for another context, and publishes what to show.

    ``load(text)`` makes a snapshot of the file drawing ``text`` (None: the default context); ``status`` is told
    one line per publication (the terminal's echo of the verdict).
    """

    def __init__(self, path: Path, load: Callable[[str | None], watching.Snapshot], board: Board,
                 status: Callable[[str], None] = lambda line: None) -> None:
        self.path, self.load, self.board, self.status = path, load, board, status
        self.state = watching.State()
        self.drawn: str | None = None  # the context the good snapshot was asked for
        self.refused: dict | None = None  # a context the page asked for that cannot be drawn: it and why

    def run(self, stop: threading.Event | None = None) -> None:
        """Look at the file until ``stop`` is set (or forever: Ctrl-C ends it)."""
        seen: tuple | None | str = "never"
        asked: str | None | object = object()
        while stop is None or not stop.is_set():
            now, wanted = watching.fingerprint(self.path), self.board.asked
            if now != seen or wanted != asked:
                saved = now != seen
                seen = now
                asked = self.step(wanted, saved)
            self.board.wake.wait(POLL_SECONDS)
            self.board.wake.clear()

    def step(self, wanted: str | None, saved: bool) -> str | None:
        """One load: a save advances the state as the terminal's does; a context asked for on a good file replaces
        the view (the marks still compare with the previous version) or, when it cannot be drawn, is refused and
        the view stays. Returns the context now drawn."""
        snapshot = self.load(wanted)
        state = self.state
        self.refused = None
        if saved or state.failed is not None or state.good is None:
            self.state, self.drawn = state.advance(snapshot), wanted if snapshot.ok else self.drawn
        elif snapshot.ok:
            self.state, self.drawn = watching.State(snapshot, state.before, None), wanted
        else:
            self.refused = {"text": wanted, "lines": [printable(line) for line in snapshot.errors]}
            if self.board.asked == wanted:  # unless the page has asked for another meanwhile
                self.board.asked = self.drawn  # it goes on showing the context it showed
        self.board.publish(paging.document(self.state, self.drawn, self.refused))
        self.status(paging.status_line(self.state))
        return self.drawn if self.refused else wanted


# ---------------------------------------------------------------- the server


class Handler(BaseHTTPRequestHandler):
    """The page's requests: ``/`` the page, ``/page.css`` and ``/page.js``, ``/view`` the document, ``/events``
    the stream of documents, and ``POST /context`` the context to draw."""

    board: Board  # set on the server's own subclass (see serve)
    port = 0  # the port the server listens on, set there too once it is bound
    server_version = "handwired"
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args) -> None:  # noqa: A002 (the standard library's name)
        pass  # the terminal shows the verdict of each save, not each request

    def _allowed_host(self) -> bool:
        return self.headers.get("Host", "") in (f"{HOST}:{self.port}", f"localhost:{self.port}")

    def _send(self, status: HTTPStatus, body: bytes = b"", kind: str = "text/plain; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", POLICY)
        if status >= 400:  # a refused request may leave its body unread: it must not be taken for the next request
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        if not self._allowed_host():
            return self._send(HTTPStatus.FORBIDDEN, b"only this machine's own address, 127.0.0.1\n")
        url = urlsplit(self.path)
        if url.path == "/":
            return self._send(HTTPStatus.OK, self._page(), TYPES["page.html"])
        if url.path.lstrip("/") in TYPES:
            name = url.path.lstrip("/")
            return self._send(HTTPStatus.OK, paging.asset(name).encode("utf-8"), TYPES[name])
        if url.path == "/view":
            return self._send(HTTPStatus.OK, self.board.latest()[1], "application/json")
        if url.path == "/events":
            return self._events(_number(parse_qs(url.query).get("after", ["0"])[0]))
        self._send(HTTPStatus.NOT_FOUND, b"not found\n")

    def _page(self) -> bytes:
        """The page with the latest document in it, so the first view is drawn as the page loads."""
        version, body = self.board.latest()
        data = body.decode("ascii").replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        return paging.asset("page.html").replace("{{document}}", data).encode("utf-8")

    def _events(self, after: int) -> None:
        """Server-Sent Events: each document newer than the one the page has, as it is published."""
        after = max(after, _number(self.headers.get("Last-Event-ID", "0")))
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()  # no length: the stream ends when the page or the server goes
        self.close_connection = True
        try:
            self.wfile.write(b"retry: 1000\n\n")
            self.wfile.flush()
            while not self.board.closed:
                news = self.board.after(after, KEEP_ALIVE_SECONDS)
                if news is None:
                    self.wfile.write(b": still here\n\n")
                else:
                    after, body = news
                    self.wfile.write(b"id: %d\nevent: view\ndata: %s\n\n" % (after, body))
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page was closed

    def do_POST(self) -> None:
        origin = self.headers.get("Origin")
        if not self._allowed_host() or origin not in (None, f"http://{HOST}:{self.port}",
                                                      f"http://localhost:{self.port}"):
            return self._send(HTTPStatus.FORBIDDEN, b"only the page itself may ask for a context\n")
        if urlsplit(self.path).path != "/context":
            return self._send(HTTPStatus.NOT_FOUND, b"not found\n")
        length = _number(self.headers.get("Content-Length", "0"))
        if not 0 < length <= MAX_CONTEXT_BODY:
            return self._send(HTTPStatus.REQUEST_ENTITY_TOO_LARGE if length else HTTPStatus.LENGTH_REQUIRED)
        try:
            text = json.loads(self.rfile.read(length)).get("text")
        except (ValueError, AttributeError):
            text = 0  # not a context: refused below
        if text is not None and not isinstance(text, str):
            return self._send(HTTPStatus.BAD_REQUEST, b'expected {"text": "a context"} or {"text": null}\n')
        self.board.ask(text or None)
        self._send(HTTPStatus.NO_CONTENT)


def _number(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() else 0


def serve(board: Board, port: int = 0) -> ThreadingHTTPServer:
    """A server for ``board`` on 127.0.0.1 (``port`` 0: a free one), answering on threads of its own."""
    handler = type("BoardHandler", (Handler,), {"board": board})
    server = ThreadingHTTPServer((HOST, port), handler)
    handler.port = server.server_port
    server.daemon_threads = True  # an open event stream never keeps the program from ending
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True,
                     name="handwired-page").start()
    return server


def url(server: ThreadingHTTPServer) -> str:
    return f"http://{HOST}:{server.server_port}/"


def stop(server: ThreadingHTTPServer, board: Board) -> None:
    """End every event stream, stop answering and free the port."""
    board.close()
    server.shutdown()
    server.server_close()


def run(path: Path, load: Callable[[str | None], watching.Snapshot], port: int = 0, open_page: bool = False,
        everything: bool = False, echo: Callable[[str], None] = print) -> None:
    """Serve the page of ``path`` until Ctrl-C, which stops it cleanly and exits with code 130; ``everything``: the
    page starts with the all-zero rows and columns shown."""
    board = Board(everything)
    try:
        server = serve(board, port)
    except OSError as error:
        raise HandwiredError(f"--port {port}: cannot listen on {HOST}:{port} ({error.strerror or error}); "
                             "choose another port, or 0 for a free one") from None
    address = url(server)
    echo(printable(f"handwired watch {path}: the page is at {address} · Ctrl-C to quit"))
    if open_page:
        import webbrowser  # only to open the page: the server itself needs no browser

        webbrowser.open(address)
    try:
        Watcher(path, load, board, status=echo).run()
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        stop(server, board)
