"""The change stream, `GET /apps/{appId}/stream` (docs/api.md, "The change stream"): one connection, as an iterator.

Server-sent events are parsed here (a few lines, as the TypeScript SDK's `stream.ts` does) rather than with a library:
the format is small, the SDK's dependencies stay httpx, pydantic and anyio, and lines end only at CR, LF or CRLF (a
JSON value may hold U+2028, which `str.splitlines` would split at). Reconnecting with the last id is the caller's;
`client.local()` does it.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
import socket
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal
from urllib.parse import quote

import httpx
from typing_extensions import Self

from ._errors import APIConnectionError, APIError, OfferkitError
from ._version import __version__

ChangeType = Literal["ready", "resync", "catalog", "account", "usage", "credits", "keep-alive"]
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class ChangeEvent:
    """One event of the change stream.

    `type` is `ready` (first on a new stream), `catalog` (`data["table"]`), `account` (`data["accountId"]`),
    `usage` (`accountId`, `entitlementId`, `usage`, `held`: the counter now), `credits` (reserved for credit balances),
    `resync` (read everything again) or `keep-alive` (the server's comment: the connection is alive, no change).
    """

    type: str
    id: str
    data: Mapping[str, Any] = field(default_factory=dict)


class ChangeStream:
    """One open connection to the change stream: iterate it for its events; `close()` ends it (from any thread).

    Made by `stream_changes(...)`. Iteration ends when the server ends the stream or `close()` is called; a cut
    connection raises `APIConnectionError` (`APITimeoutError` after `read_timeout` seconds without a byte).
    """

    def __init__(self, client: httpx.Client, response: httpx.Response, owns_client: bool) -> None:
        self._client = client
        self._response = response
        self._owns_client = owns_client
        self._closed = threading.Event()
        self._iterating = False

    def __iter__(self) -> Iterator[ChangeEvent]:
        self._iterating = True
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        buffer = ""
        event_id, event_type, data = "", "message", ""
        try:
            for chunk in self._response.iter_bytes():
                buffer += decoder.decode(chunk)
                while True:
                    m = _LINE_END.search(buffer)
                    # A lone CR at the end may be the first half of CRLF: wait for the next chunk.
                    if m is None or (m.group() == "\r" and m.end() == len(buffer)):
                        break
                    line, buffer = buffer[: m.start()], buffer[m.end() :]
                    if line == "":
                        if data != "" or event_type != "message":
                            yield ChangeEvent(event_type, event_id, json.loads(data or "{}"))
                        event_id, event_type, data = "", "message", ""
                    elif line.startswith(":"):
                        yield ChangeEvent("keep-alive", "", {})
                    else:
                        name, colon, value = line.partition(":")
                        if colon and value.startswith(" "):
                            value = value[1:]
                        if name == "id":
                            event_id = value
                        elif name == "event":
                            event_type = value
                        elif name == "data":
                            data = f"{data}\n{value}" if data else value
        except httpx.TimeoutException as exc:
            if not self._closed.is_set():
                raise APIConnectionError(f"the change stream was silent too long: {exc}") from exc
        except (httpx.TransportError, httpx.StreamError, OSError) as exc:
            if not self._closed.is_set():
                raise APIConnectionError(f"the change stream was cut: {exc}") from exc
        finally:
            self._release()

    def close(self) -> None:
        """Ends the stream. Safe from another thread while one iterates it: its socket is shut down, which wakes the
        blocked read (closing a socket alone does not), and the iterating thread then releases the connection."""
        self._closed.set()
        stream = self._response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)
        if not self._iterating:
            self._release()

    def _release(self) -> None:
        self._response.close()
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
        self._release()


def stream_changes(
    *,
    base_url: str,
    app_id: str,
    credential: str,
    last_event_id: str | None = None,
    connect_timeout: float = 10.0,
    read_timeout: float = 45.0,
    http_client: httpx.Client | None = None,
) -> ChangeStream:
    """Opens `GET /apps/{app_id}/stream` with the secret key (or an account token: its own account's events and the
    catalog's), resuming after `last_event_id` when given (`Last-Event-ID`).

    `with stream_changes(...) as events: for e in events: ...`. Raises `APIError` when the service refuses (401 for
    the publishable key) and `APIConnectionError` when it cannot be reached; `read_timeout` is the seconds without a
    byte (the server sends a keep-alive every 15 s) after which the connection counts as cut.
    """
    client = http_client or httpx.Client(follow_redirects=False)
    url = f"{base_url.rstrip('/')}/apps/{quote(app_id, safe='')}/stream"
    headers = {
        "Authorization": f"Bearer {credential}",
        "Accept": "text/event-stream",
        "User-Agent": f"offerkit-python/{__version__}",
    }
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    request = client.build_request(
        "GET", url, headers=headers, timeout=httpx.Timeout(read_timeout, connect=connect_timeout)
    )
    try:
        response = client.send(request, stream=True)
    except httpx.TransportError as exc:
        if http_client is None:
            client.close()
        raise APIConnectionError(f"could not reach {url}: {exc}") from exc
    try:
        if not response.is_success:
            try:
                response.read()
            except httpx.TransportError as exc:
                raise APIConnectionError(f"the stream's answer ({response.status_code}) was cut: {exc}") from exc
            try:
                body: Any = json.loads(response.text)
            except ValueError:
                body = response.text
            raise APIError.from_response(response.status_code, body, response.headers)
        kind = response.headers.get("content-type", "")
        if not kind.startswith("text/event-stream"):
            raise OfferkitError(f"the stream answered {kind or 'no content type'}, not text/event-stream")
    except BaseException:
        response.close()
        if http_client is None:
            client.close()
        raise
    return ChangeStream(client, response, http_client is None)
