"""HTTPS for the embedded API: one CA per process, even when episodes start together."""

from __future__ import annotations

import ssl
import threading
import time
import urllib.request

import pytest

from netarena.k8s.apiserver import ApiServer, ObjectStore, tls


def test_concurrent_first_use_makes_one_certificate(monkeypatch: pytest.MonkeyPatch) -> None:
    real = tls._make

    def slow() -> tls.ServingCertificate:
        time.sleep(0.05)
        return real()

    monkeypatch.setattr(tls, "_MADE", [])
    monkeypatch.setattr(tls, "_make", slow)
    got: list[tls.ServingCertificate] = []
    threads = [threading.Thread(target=lambda: got.append(tls.serving_certificate()))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(c) for c in got}) == 1


def test_server_speaks_https_verified_by_the_ca() -> None:
    with ApiServer(ObjectStore(seed=1), tls=True) as api:
        assert api.url is not None and api.url.startswith("https://127.0.0.1:")
        context = ssl.create_default_context(cadata=tls.serving_certificate().ca_pem.decode())
        with urllib.request.urlopen(f"{api.url}/version", context=context, timeout=5) as r:
            assert b"gitVersion" in r.read()
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"{api.url}/version", timeout=5)  # unknown CA


def test_https_kubeconfig_needs_a_token() -> None:
    from netarena.common.core.errors import EmulatorError
    from netarena.k8s.kubectl import KubeconfigIdentity, Kubectl

    with pytest.raises(EmulatorError, match="needs a token"):
        Kubectl("https://127.0.0.1:1", identity=KubeconfigIdentity(ca_pem=b"x"))
