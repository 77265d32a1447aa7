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


@pytest.mark.parametrize("kind", ["b2b", "b2c"])
def test_generate_a_pro_org_names_its_kind_and_hidden_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    out = tmp_path / f"{kind}.sqlite"
    assert main(["generate", "--kind", kind, "--seed", "2", "--scale", "0.05", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    m = read_manifest(out)
    assert (m.kind, m.seed, m.scale) == (kind, 2, 0.05)
    assert printed.startswith(f"wrote {out} ({kind} org, generator v{m.generator_version}, seed 2, scale 0.05")
    assert "Opportunity" in printed and "hidden tables" in printed and "crmarena_hidden_quote" in printed
    assert m.content_hash in printed


def test_generate_refuses_an_unknown_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["generate", "--kind", "retail", "--out", str(tmp_path / "x.sqlite")])
    assert exited.value.code == 2 and "invalid choice: 'retail'" in capsys.readouterr().err
    assert not (tmp_path / "x.sqlite").exists()
