"""The simulated API server on loopback: ``http.server`` in front of ``http.handlers.Api``.

HTTP/1.1 with keep-alive, one daemon thread per connection, watch answers chunked (one event
per chunk). Port 0 picks a free port. ``start()`` writes a kubeconfig (one cluster
``server: http://127.0.0.1:PORT``, user ``{}``, a context with namespace ``default``) that the
official client and kubectl load as they are. In realtime mode a thread moves the virtual clock
with the wall clock every 0.2 s; otherwise time moves only by ``sim.advance`` or
``POST /sim/v1/advance``. ``stop()`` ends every watch stream and connection and joins.
"""

from __future__ import annotations

import contextlib
import selectors
import shutil
import socket
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from simulators.kubernetes.http.handlers import (
    Api,
    LogSource,
    Streamed,
    http_request,
    kubelet_logs,
    reply_headers,
)

if TYPE_CHECKING:
    from simulators.kubernetes.sim import KubeSim

TICK_SECONDS: Final = 0.2


def kubeconfig_text(url: str, namespace: str = "default") -> str:
    """A kubeconfig for ``url``: one cluster, user ``{}``, one context (measured to suffice)."""
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        "- name: kube-sim\n"
        "  cluster:\n"
        f"    server: {url}\n"
        "users:\n"
        "- name: kube-sim\n"
        "  user: {}\n"
        "contexts:\n"
        "- name: kube-sim\n"
        "  context:\n"
        "    cluster: kube-sim\n"
        "    user: kube-sim\n"
        f"    namespace: {namespace}\n"
        "current-context: kube-sim\n"
        "preferences: {}\n"
    )


class _HTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` whose ``shutdown`` wakes the accept loop at once (the stock one
    waits out the loop's ``poll_interval``: ~50 ms per server stopped, on average)."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    owner: Server

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._wake_read, self._wake_write = socket.socketpair()
        self._stop_serving = False
        self._stopped_serving = threading.Event()

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """The stock loop (select, accept, ``service_actions``), also woken by ``shutdown``."""
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self, selectors.EVENT_READ)
                selector.register(self._wake_read, selectors.EVENT_READ)
                while not self._stop_serving:
                    ready = selector.select(poll_interval)
                    if self._stop_serving:
                        break
                    if any(key.fileobj is self for key, _ in ready):
                        self._handle_request_noblock()  # type: ignore[attr-defined]
                    self.service_actions()
        finally:
            self._stopped_serving.set()

    def shutdown(self) -> None:
        """Stop the loop and wait until it has stopped (called from another thread)."""
        self._stop_serving = True
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")
        self._stopped_serving.wait()

    def server_close(self) -> None:
        super().server_close()
        for end in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                end.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-answer is no error of the server's; others print."""
        import sys

        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # headers and body go out as separate writes: without this, Nagle and delayed ACKs
        # hold every small answer ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.owner._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        req = http_request(
            self.command,
            self.path,
            self.headers.get("Accept", ""),
            self.headers.get("Content-Type", ""),
            body,
        )
        answer = self.server.owner.api.answer(req)
        if isinstance(answer, Streamed):
            self._stream(answer)
            return
        if answer.lose:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_response(answer.code)
        for header, value in reply_headers(answer):
            self.send_header(header, value)
        self.end_headers()
        self.wfile.write(answer.body)

    def _stream(self, answer: Streamed) -> None:
        owner = self.server.owner
        owner._streams_open(1)  # before any byte: stop() waits for the stream to end cleanly
        try:
            self.send_response(200)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Cache-Control", "no-cache, private")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            while True:
                batch = answer.stream.next_batch()
                if batch is None:
                    break
                for event in batch:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True
        finally:
            owner._streams_open(-1)

    do_GET = _serve
    do_POST = _serve
    do_PUT = _serve
    do_PATCH = _serve
    do_DELETE = _serve


class Server:
    """``Server(sim, port=0, realtime=False)``: ``start()``, ``stop()``, ``url``, ``kubeconfig``."""

    def __init__(
        self,
        sim: KubeSim,
        port: int = 0,
        *,
        realtime: bool = False,
        logs: LogSource = kubelet_logs,
    ) -> None:
        self.sim = sim
        self.port = port
        self.realtime = realtime
        self._logs = logs
        self._stopping = False
        self._httpd: _HTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._ticker_stop = threading.Event()
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        self._streams = 0
        self._streams_done = threading.Condition(self._conn_lock)
        self._dir: str | None = None
        self.url = ""
        self.kubeconfig = ""
        self.api = Api(sim, "", self.stopped, logs)
        self.api.follow_logs = realtime

    def stopped(self) -> bool:
        return self._stopping

    @property
    def logs(self) -> LogSource:
        return self.api.logs

    @logs.setter
    def logs(self, source: LogSource) -> None:
        """Where ``pods/log`` reads from (the kubelet's ``logs``; tests may put a fake)."""
        self.api.logs = source

    def start(self) -> Server:
        httpd = _HTTPServer(("127.0.0.1", self.port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self.port = int(httpd.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.api.host = f"127.0.0.1:{self.port}"
        self._dir = tempfile.mkdtemp(prefix="kube-sim-")
        path = Path(self._dir) / "kubeconfig"
        path.write_text(kubeconfig_text(self.url))
        self.kubeconfig = str(path)
        serving = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            daemon=True,
            name="kube-sim-http",
        )
        serving.start()
        self._threads.append(serving)
        if self.realtime:
            ticker = threading.Thread(target=self._tick, daemon=True, name="kube-sim-clock")
            ticker.start()
            self._threads.append(ticker)
        return self

    def _tick(self) -> None:
        """Realtime mode: the virtual clock follows the wall clock."""
        last = time.monotonic()
        while not self._ticker_stop.wait(TICK_SECONDS):
            now = time.monotonic()
            self.sim.advance(now - last)
            last = now

    def _track(self, connection: socket.socket, opened: bool) -> None:
        with self._conn_lock:
            if opened:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _streams_open(self, delta: int) -> None:
        with self._conn_lock:
            self._streams += delta
            self._streams_done.notify_all()

    @property
    def open_watches(self) -> int:
        """How many watch streams are being served now."""
        with self._conn_lock:
            return self._streams

    def wait_for_watches(self, count: int, timeout: float = 10.0) -> bool:
        """Block until at least ``count`` watch streams are open (False if ``timeout`` passed)."""
        with self._conn_lock:
            return self._streams_done.wait_for(lambda: self._streams >= count, timeout=timeout)

    def stop(self) -> None:
        """End every stream and connection, stop serving, join, remove the kubeconfig."""
        if self._httpd is None:
            return
        self._stopping = True
        self._ticker_stop.set()
        with self.sim.lock:
            self.sim.store.changed.notify_all()
        with self._conn_lock:
            self._streams_done.wait_for(lambda: self._streams == 0, timeout=2.0)
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._httpd.shutdown()
        self._httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=2.0)
        self._threads.clear()
        self._httpd = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
