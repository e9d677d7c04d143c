"""The simulated API server in process, for clients built on urllib3 (the official client).

:class:`InProcessPool` is a ``urllib3.PoolManager`` that hands each request to the server's
``Api`` in the caller's thread: the same ``Request`` the HTTP layer reads from a socket, the
same answer (status, headers, body) it would write, read back through urllib3's own
``HTTPResponse``. What it leaves out is the socket: no connection per client, no thread per
connection, no HTTP parsing on either side, which is most of a request's cost over loopback.
It is to the Kubernetes harnesses what the Slurm harnesses' in-process transport is to
``sbatch``: the adapter's whole client stack runs, only the wire is gone.

- A ``lose`` answer (the ``lose_next_reply`` fault: the write landed, the connection closed
  unanswered) raises what urllib3 raises when that happens on loopback with retries off:
  ``ProtocolError('Connection aborted.', RemoteDisconnected(...))``. urllib3's retries are not
  replayed here: the adapter's client turns them off, and only its requests meet lost replies.
- Streaming requests (``watch``, a followed log) go over the real connection: their answers
  are chunks over time, which a socket carries and a single call cannot.
- ``timeout`` is not applied: the server answers within the call, on the virtual clock.
"""

from __future__ import annotations

import http.client
import io
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import urllib3
from urllib3._collections import HTTPHeaderDict
from urllib3.exceptions import ProtocolError

from simulators.kubernetes.http.handlers import Streamed, http_request, reply_headers

if TYPE_CHECKING:
    from simulators.kubernetes.server import Server

STREAMING: Final = ("watch", "follow")
"""Query parameters whose ``true`` asks for a stream: those requests take the socket."""


def _streams(query: dict[str, str]) -> bool:
    return any(query.get(name, "").lower() in ("true", "1") for name in STREAMING)


class InProcessPool(urllib3.PoolManager):
    """``rest_client.pool_manager = InProcessPool(server)``: every request of that client is
    answered by ``server.api`` in process (streams excepted, see the module)."""

    def __init__(self, server: Server, **connection_pool_kw: Any) -> None:
        super().__init__(**connection_pool_kw)
        self.server = server
        self.requests = 0
        """How many requests it answered in process."""

    def urlopen(  # type: ignore[override]
        self, method: str, url: str, redirect: bool = True, **kw: Any
    ) -> urllib3.BaseHTTPResponse:
        split = urlsplit(url)
        target = f"{split.path}?{split.query}" if split.query else split.path
        headers = HTTPHeaderDict(kw.get("headers") or {})
        body = kw.get("body")
        if isinstance(body, str):
            body = body.encode()
        req = http_request(
            method.upper(),
            target,
            headers.get("Accept", ""),
            headers.get("Content-Type", ""),
            bytes(body or b""),
        )
        if _streams(req.query):
            return super().urlopen(method, url, redirect=redirect, **kw)
        answer = self.server.api.answer(req)
        if isinstance(answer, Streamed):
            raise AssertionError(f"{method} {url}: a stream answered a request that asked none")
        self.requests += 1
        if answer.lose:
            raise ProtocolError(
                "Connection aborted.",
                http.client.RemoteDisconnected("Remote end closed connection without response"),
            )
        return urllib3.HTTPResponse(
            body=io.BytesIO(answer.body),
            headers=HTTPHeaderDict(reply_headers(answer)),
            status=answer.code,
            reason=http.client.responses.get(answer.code, ""),
            version=11,
            version_string="HTTP/1.1",
            preload_content=bool(kw.get("preload_content", True)),
            decode_content=bool(kw.get("decode_content", True)),
            request_method=method.upper(),
            request_url=url,
        )


__all__ = ["InProcessPool"]
