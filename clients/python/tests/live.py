"""Real processes for the tests: the repository's server (``node dist/bundle/evalgate.js serve``) on a free
loopback port with a fresh SQLite data directory, a mock model provider speaking OpenAI chat
completions, and loopback proxies/servers that misbehave on purpose."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MAIN = os.path.join(REPO, "dist", "bundle", "evalgate.js")


class Server:
    """``evalgate serve`` in a subprocess; ``key`` is the one the first start prints, read as a user would."""

    def __init__(self, env: Optional[Dict[str, str]] = None) -> None:
        if not os.path.exists(MAIN):
            raise RuntimeError(f"{MAIN} is missing: run `npm ci` (or `npm run build`) at the repository root first")
        self.data_dir = tempfile.mkdtemp(prefix="evalgate-py-")
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("EVALGATE_", "OPENAI_", "ANTHROPIC_"))}
        clean.update(
            {
                "EVALGATE_HOST": "127.0.0.1",
                "EVALGATE_PORT": "0",
                "EVALGATE_DATA_DIR": self.data_dir,
                "EVALGATE_LOG_LEVEL": "warn",
                "EVALGATE_RUN_POLL_MS": "50",
                "EVALGATE_LOG_WRITER_THREAD": "0",
            }
        )
        clean.update(env or {})
        self.process = subprocess.Popen(
            ["node", MAIN, "serve"],
            cwd=REPO,
            env=clean,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.output: List[str] = []
        self.base_url = ""
        self.key = ""
        ready = threading.Event()

        def drain() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.output.append(line)
                found = re.search(r"listening on (http://\S+)", line)
                if found and not self.base_url:
                    self.base_url = found.group(1)
                key = re.match(r"^\s+(eg_\S+)\s*$", line)
                if key and not self.key:
                    self.key = key.group(1)
                if self.base_url and self.key:
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(60) or not (self.base_url and self.key):
            self.close()
            raise RuntimeError("The server did not start:\n" + "".join(self.output[-40:]))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.data_dir, ignore_errors=True)


def between(text: str, label: str) -> Optional[str]:
    found = re.search(rf"^{label}:[ \t]*(.*)$", text, re.M)
    return found.group(1).strip() if found else None


class MockUpstream:
    """An OpenAI-compatible provider on loopback. A judge prompt with ``Answer:`` and ``Expected:`` lines
    scores 1 when they agree (case aside); any other prompt is answered ``echo: <text>`` (generation).
    A prompt containing ``hold-me`` is answered only once ``release()`` is called."""

    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.held = threading.Event()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "judge-model", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._json(404, {"error": {"message": "not found"}})
                    return
                mock.requests.append(body)
                users = [m for m in body.get("messages", []) if m.get("role") == "user"]
                text = users[-1]["content"] if users else ""
                if isinstance(text, list):
                    text = " ".join(p.get("text", "") for p in text if isinstance(p, dict))
                if "hold-me" in text:
                    mock.held.wait(30)
                answer, expected = between(text, "Answer"), between(text, "Expected")
                if answer is not None and expected is not None:
                    score = 1 if answer.lower() == expected.lower() else 0
                    content = json.dumps({"score": score, "reasoning": "agrees" if score else "differs"})
                else:
                    content = f"echo: {text.strip()}"
                reply = {
                    "id": f"chatcmpl-{len(mock.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "judge-model"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    chunk = {
                        "id": reply["id"],
                        "object": "chat.completion.chunk",
                        "created": reply["created"],
                        "model": reply["model"],
                        "choices": [
                            {"index": 0, "delta": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                        ],
                        "usage": reply["usage"],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())
                    self.close_connection = True
                    return
                self._json(200, reply)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def release(self) -> None:
        self.held.set()

    def close(self) -> None:
        self.held.set()
        self.server.shutdown()
        self.server.server_close()


class DroppingProxy:
    """An HTTP proxy on loopback in front of ``target``. For the first ``drop`` requests that ``match``,
    it forwards the request, lets the server answer, then closes the client's connection without a byte
    of the response: the server acted, the client never heard."""

    def __init__(self, target: str, match: Callable[[str, str], bool], drop: int = 1) -> None:
        self.seen: List[Dict[str, Any]] = []
        self.dropped = 0
        host, port = target.replace("http://", "").split(":")
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                body = self._body()
                drop_headers = ("host", "connection", "transfer-encoding", "content-length")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in drop_headers}
                if body is not None:
                    headers["content-length"] = str(len(body))
                proxy.seen.append({"method": self.command, "path": self.path, "headers": headers, "body": body})
                upstream = http.client.HTTPConnection(host, int(port), timeout=30)
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                data = response.read()
                upstream.close()
                if proxy.dropped < drop and match(self.command, self.path):
                    proxy.dropped += 1
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(response.status)
                for k, v in response.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> Optional[bytes]:
                if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                    parts = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            return b"".join(parts)
                        parts.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("content-length") or 0)
                return self.rfile.read(length) if length else None

            do_GET = do_POST = do_PATCH = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class SilentServer:
    """Accepts connections and reads requests but never answers (for timeouts)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = 0
        self.conns: List[socket.socket] = []
        self.closed = False

        def accept() -> None:
            while not self.closed:
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    return
                self.accepted += 1
                self.conns.append(conn)

        threading.Thread(target=accept, daemon=True).start()

    def close(self) -> None:
        self.closed = True
        for c in self.conns:
            c.close()
        self.sock.close()


def free_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CuttingProxy:
    """A TCP proxy on loopback in front of ``target`` that breaks the first ``cuts`` connections whose
    request line contains ``needle``: it lets the response headers through, then closes the connection
    (a proxy's idle timeout or a server restart, as a client sees it)."""

    def __init__(self, target: str, needle: bytes, cuts: int = 1) -> None:
        host, port = target.replace("http://", "").split(":")
        self.upstream = (host, int(port))
        self.needle = needle
        self.cuts_left = cuts
        self.cut = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(self.upstream)
        # Connections are kept alive: each request on it is looked at, and the response to a matching
        # one is cut after its headers.
        state = {"cut": False}

        def close_both() -> None:
            for s in (client, upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

        def requests() -> None:
            try:
                while True:
                    data = client.recv(65536)
                    if not data:
                        break
                    if self.needle in data.split(b"\r\n", 1)[0] and self.cuts_left > 0:
                        self.cuts_left -= 1
                        state["cut"] = True
                    upstream.sendall(data)
            except OSError:
                pass
            finally:
                close_both()

        threading.Thread(target=requests, daemon=True).start()
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                if state["cut"]:
                    head, sep, _ = data.partition(b"\r\n\r\n")
                    client.sendall(head + sep)
                    self.cut += 1
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            close_both()

    def close(self) -> None:
        self.sock.close()
