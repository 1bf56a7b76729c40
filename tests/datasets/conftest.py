"""Fixtures of the dataset tests: an isolated environment and local HTTP servers."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No data dir, no origin override, no proxies, HOME in tmp_path."""
    for var in ("KERASFLOW_DATA_DIR", "KERASFLOW_DATASETS_ORIGIN", "http_proxy",
                "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002
        pass


@pytest.fixture(scope="module")
def serve():
    """Starts HTTP servers on 127.0.0.1 for directories; stops them at the end."""
    servers = []

    def start(directory: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(directory))
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}/"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()
