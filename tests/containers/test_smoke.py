"""The containerised smoke evaluation: build every image, evaluate the reference purple agent.

Needs a running Docker engine (skipped otherwise; CI has none). The base image is
``NETARENA_BASE_IMAGE``, else ``netarena-base:bookworm`` when ``docker/make-base-image.sh`` has
built it, else the Dockerfiles' default. Behind a TLS-inspecting proxy set ``NETARENA_EXTRA_CA``;
when it is unset, the CA certificates this host trusts beyond Debian's
(``/usr/local/share/ca-certificates``) are passed, so the test builds wherever the host can
reach the package index. ``scripts/containers.sh`` documents the rest.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("malt", "route", "k8s")
LOCAL_BASE = "netarena-base:bookworm"


def _engine() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.skipif(not _engine(), reason="no Docker engine reachable"),
]


@pytest.mark.timeout(1800)
def test_build_and_smoke_every_app(tmp_path: Path) -> None:
    env = {**os.environ, "SMOKE_OUT": str(tmp_path), "SMOKE_QUERIES": "2", "TAG": "test"}
    base = os.environ.get("NETARENA_BASE_IMAGE")
    if not base and subprocess.run(["docker", "image", "inspect", LOCAL_BASE],
                                   capture_output=True, timeout=30).returncode == 0:
        base = LOCAL_BASE  # built by docker/make-base-image.sh: needs no registry
    if base:
        env["BASE_IMAGE"] = base
    local_cas = sorted(Path("/usr/local/share/ca-certificates").glob("**/*.crt"))
    if "NETARENA_EXTRA_CA" not in env and local_cas:
        bundle = tmp_path / "extra-ca.pem"
        bundle.write_text("".join(ca.read_text() for ca in local_cas))
        env["NETARENA_EXTRA_CA"] = str(bundle)
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "containers.sh"), "all"], env=env,
                          capture_output=True, text=True, timeout=1700)
    assert proc.returncode == 0, proc.stderr[-4000:]
    times = (tmp_path / "build-times.txt").read_text().split()
    assert "netarena-route:test" in times
    for app in APPS:
        doc = json.loads((tmp_path / f"agentbeats-{app}.json").read_text())
        assert doc["status"] == "completed"
        assert list(doc["participants"]) == [f"{app}_operator"]
        queries = [r for r in doc["results"] if r["kind"] == "query"]
        (summary,) = [r for r in doc["results"] if r["kind"] == "summary"]
        assert len(queries) == 2 and all(q["correct"] for q in queries)
        assert summary["correctness"]["rate"] == 1.0
