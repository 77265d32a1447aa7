"""``crmarena-gym generate`` on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from crmarena_gym.cli import main
from crmarena_gym.datagen import read_manifest


def test_generate_writes_the_org_and_prints_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "org.sqlite"
    assert main(["generate", "--seed", "3", "--scale", "0.1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    m = read_manifest(out)
    assert (m.seed, m.scale, m.latent) == (3, 0.1, True)
    assert m.content_hash in printed
    assert "Case" in printed and f"{m.row_counts['OrderItem']:,}" in printed


def test_an_existing_file_needs_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "org.sqlite"
    out.write_text("keep me")
    assert main(["generate", "--scale", "0.05", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and "--force" in err and str(out) in err
    assert out.read_text() == "keep me"
    assert main(["generate", "--scale", "0.05", "--out", str(out), "--force", "--no-latent"]) == 0
    assert read_manifest(out).latent is False


@pytest.mark.parametrize(("args", "quoted"), [(["--scale", "0.001"], "0.001"), (["--seed", "-5"], "-5")])
def test_bad_values_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], quoted: str
) -> None:
    out = tmp_path / "org.sqlite"
    assert main(["generate", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert quoted in err and err.startswith("crmarena-gym generate: ")
    assert not out.exists()
