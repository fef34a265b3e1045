"""A build without a registry says how to make the local base image (no engine needed:
``docker`` here is a stand-in whose engine answers but has no base image and cannot pull)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAKE_DOCKER = """#!/bin/sh
case "$1" in
  info) exit 0 ;;
  build) echo "docker build must not run" >&2; exit 99 ;;
  *) exit 1 ;;
esac
"""


def test_a_build_without_a_registry_names_the_local_base_image(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(FAKE_DOCKER)
    docker.chmod(0o755)
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "containers.sh"), "build"],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin",
                               "SMOKE_OUT": str(tmp_path / "out")})
    assert proc.returncode == 2, proc.stderr
    assert "docker/make-base-image.sh" in proc.stderr
    assert "BASE_IMAGE=netarena-base:bookworm" in proc.stderr
    assert "must not run" not in proc.stderr
