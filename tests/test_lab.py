"""`make lab`'s server opens a jupytext source as a notebook: started headless, asked for one `.md`
through the contents API, shut down."""

import json
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import jupytext

REPO = Path(__file__).resolve().parents[1]
JUPYTER = Path(sys.executable).with_name("jupyter")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, token: str):
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def test_the_lab_server_opens_a_md_source_as_a_notebook(tmp_path):
    port, token = _free_port(), secrets.token_hex(16)
    source = sorted((REPO / "notebooks").glob("*/*.md"))[0]
    rel = source.relative_to(REPO).as_posix()
    env = {"PATH": str(JUPYTER.parent) + ":/usr/bin:/bin", "HOME": str(tmp_path), "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    server = subprocess.Popen(
        [str(JUPYTER), "lab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.root_dir={REPO}", f"--IdentityProvider.token={token}", "--allow-root"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(120):
            try:
                _get(f"{base}/api/status", token)
                break
            except OSError:
                assert server.poll() is None, server.stdout.read()[-3000:]
                time.sleep(0.5)
        model = _get(f"{base}/api/contents/{rel}?type=notebook&content=1", token)
        assert model["type"] == "notebook" and model["format"] == "json"
        cells = model["content"]["cells"]
        expected = jupytext.read(source)
        assert len(cells) == len(expected.cells) and sum(c["cell_type"] == "code" for c in cells) > 1
        tagged = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
        assert len(tagged) == 1 and 'profile = "ci"' in "".join(tagged[0]["source"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert not list((REPO / "notebooks").glob("*/*.ipynb")), "opening a source must not write a paired notebook"
