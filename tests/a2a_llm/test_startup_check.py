"""The LiteLLM purple agent checks its model before serving: a bad key never gets a port."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from netarena.a2a_llm.cli import purple
from tests.helpers.fake_llm import fake_llm_server
from tests.helpers.toy import ToyApp

MODEL = "openai/fake-model"


@pytest.fixture
def command(monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    for name in ("OPENAI_API_KEY", "OPENAI_API_BASE", "MODEL_API_BASE", "MODEL_NAME"):
        monkeypatch.delenv(name, raising=False)
    app = typer.Typer()
    app.command()(purple)
    return app


@pytest.mark.timeout(120)  # a check that wrongly passed would serve for ever
def test_purple_exits_2_at_start_when_its_model_cannot_be_used(
        command: typer.Typer, monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_llm_server(ToyApp().reference_agent()) as (api_base, fake):
        monkeypatch.setenv("MODEL_API_BASE", api_base)
        missing = CliRunner().invoke(command, ["--solver", "litellm", "--model", MODEL])
        assert missing.exit_code == 2 and "OPENAI_API_KEY" in missing.output, missing.output
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
        fake.refuse_checks = 401
        refused = CliRunner().invoke(command, ["--solver", "litellm", "--model", MODEL])
        assert refused.exit_code == 2 and "refused the credentials" in refused.output
    assert fake.checks == 1 and fake.requests == 0  # the missing key never left the process


def test_the_env_list_docker_example_parses_under_the_images_entrypoint(
        command: typer.Typer, monkeypatch: pytest.MonkeyPatch) -> None:
    """env.list.example's ``docker run`` line: what follows the image goes to its entrypoint,
    ``netarena purple``, so it must be purple's options only (not ``netarena purple ...``)."""
    import re
    import shlex
    from pathlib import Path

    import netarena.a2a_llm.cli as purple_cli

    root = Path(__file__).resolve().parents[2]
    dockerfile = (root / "a2a_llm" / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["netarena-entrypoint", "purple"]' in dockerfile
    text = (root / "env.list.example").read_text()
    lines = re.search(r"#   (docker run .*?)\n#   (.*?)\n", text)
    assert lines is not None
    argv = shlex.split(lines.group(1).rstrip("\\") + " " + lines.group(2))
    after_image = argv[argv.index("netarena-purple") + 1:]
    served: list[str] = []
    monkeypatch.setattr(purple_cli, "serve_web",
                        lambda app, host, port, limits: served.append(host))
    monkeypatch.setenv("MODEL_NAME", MODEL)
    result = CliRunner().invoke(command, [*after_image, "--no-model-check"])
    assert result.exit_code == 0, result.output
    assert served == ["0.0.0.0"]
