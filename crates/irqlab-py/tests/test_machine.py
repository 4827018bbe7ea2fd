"""irqlab.capture, platform_from_capture and advise: the same answers as the command line."""

import json
import pathlib
import subprocess

import pandas as pd
import pytest

import irqlab

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "irqlab-capture" / "tests" / "fixtures"


def test_capture_reads_a_directory_as_capture_show_does(root, irqlab_bin):
    c = irqlab.capture(FIXTURES / "dev-vm-2vcpu")
    assert [r["name"] for r in c["runs"]] == ["qd1-psync", "qd32-libaio", "qd32x2-libaio", "qd32-uring-batch"]
    qd1 = c["runs"][0]
    assert qd1["ios_per_interrupt"] == pytest.approx(1.0, abs=0.05)
    assert c["host"]["devices"][0]["kind"] == "virtio-blk"
    shown = subprocess.run(
        [irqlab_bin, "capture", "--show", str(FIXTURES / "dev-vm-2vcpu")], check=True, capture_output=True, text=True
    )
    assert c["show"] == shown.stdout


def test_capture_errors_name_the_file(tmp_path):
    with pytest.raises(irqlab.IrqlabError, match="no manifest.json and no lscpu.txt"):
        irqlab.capture(tmp_path)
    with pytest.raises(TypeError, match="record="):
        irqlab.capture(tmp_path, record="yes")


def test_capture_records_this_machine_without_fio(tmp_path):
    c = irqlab.capture(tmp_path / "cap", record=True, no_fio=True)
    assert c["host"]["topology"]["online"]
    assert (tmp_path / "cap" / "manifest.json").exists()
    assert c["runs"] == []


def test_platform_from_capture_and_advise_on_the_seed_machine(tmp_path, root, irqlab_bin):
    out = tmp_path / "emr-bkc.toml"
    b = irqlab.platform_from_capture(FIXTURES / "emr-bkc", out=out, max_evals=12, platforms=root / "platforms")
    assert out.read_text() == b["platform_toml"]
    assert b["platform_toml"].startswith("# Platform of emr-bkc")
    assert {f["key"] for f in b["fitted"]} >= {"uncore.stack_rtt_ns"}
    check = subprocess.run([irqlab_bin, "platform", "--check", str(out)], cwd=root, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    job = FIXTURES / "emr-bkc" / "aio-stock.fio"
    df = irqlab.advise(job, out, candidates=["posted"], window="4ms")
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == irqlab.ADVISE_COLUMNS
    assert list(df["name"]) == ["posted", "stock"]
    assert df.attrs["recommendation"]["candidate"] == "posted"
    assert "intremap=posted_msi" in df.attrs["recommendation"]["knob"]
    cli = subprocess.run(
        [irqlab_bin, "advise", str(job), "--platform", str(out), "--candidates", "posted", "--window", "4ms", "--output-format", "json"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    assert [r["iops"] for r in json.loads(cli.stdout)["rows"]] == list(df["iops"])


def test_advise_refuses_bad_arguments_by_name(job, platform):
    with pytest.raises(ValueError, match="objective='fast'"):
        irqlab.advise(job, platform, objective="fast")
    with pytest.raises(irqlab.IrqlabError, match="max_p99"):
        irqlab.advise(job, platform, max_p99="soon")
    with pytest.raises(irqlab.IrqlabError, match="max_cpu"):
        irqlab.advise(job, platform, max_cpu=250)
    with pytest.raises(irqlab.IrqlabError, match="--candidates: 'warp'"):
        irqlab.advise(job, platform, candidates=["warp"], window="1ms")
    with pytest.raises(ValueError, match="seed=-1"):
        irqlab.advise(job, platform, seed=-1)
