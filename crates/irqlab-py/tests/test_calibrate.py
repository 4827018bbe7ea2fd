"""irqlab.calibrate: the same fit on threads and on a Dask cluster, and the CLI's fit."""

import subprocess

import pandas as pd
import pytest
from distributed import Client, LocalCluster

import irqlab


@pytest.fixture
def targets(tmp_path, root):
    """A cheap scenario (1 ms, one disk) and a target IOPS for it."""
    (tmp_path / "job.fio").write_text(
        "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\nfilename=/dev/nvme0n1\n"
        "cpus_allowed=0\ntime_based\nruntime=1ms\n"
    )
    (tmp_path / "s.toml").write_text(
        f'experiment = "E"\nrow = "r"\njob = "job.fio"\nplatform = "{root}/platforms/example.toml"\n'
        'policy = "--delivery posted"\n'
    )
    (tmp_path / "t.toml").write_text(
        '[[target]]\nscenario = "s.toml"\nmetric = "iops"\nvalue = 250000\n'
        '[[target]]\nscenario = "s.toml"\nmetric = "interrupts_per_sec"\nvalue = 200000\n'
    )
    return tmp_path / "t.toml"


def test_fit_is_the_same_on_threads_a_cluster_and_the_cli(root, irqlab_bin, targets, tmp_path):
    args = dict(params={"cpu.irq_entry_ns": (100, 900)}, targets=[targets], max_evals=8)
    here = irqlab.calibrate(root / "platforms" / "example.toml", out=tmp_path / "here.toml", **args)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, Client(lc) as c:
        there = irqlab.calibrate(root / "platforms" / "example.toml", cluster=c, **args)
    assert here["sets"] == there["sets"] and here["evals"] == there["evals"]
    pd.testing.assert_frame_equal(here["residuals"], there["residuals"])
    assert here["platform_toml"] == there["platform_toml"]
    assert 100 <= here["params"][0]["value"] <= 900
    cli = tmp_path / "cli.toml"
    subprocess.run(
        [irqlab_bin, "calibrate", "--platform", str(root / "platforms" / "example.toml"),
         "--param", "cpu.irq_entry_ns=100..900", "--targets", str(targets), "--max-evals", "8", "--out", str(cli)],
        check=True,
        capture_output=True,
    )
    assert cli.read_text() == (tmp_path / "here.toml").read_text()


def test_bad_params_are_refused(root, targets):
    with pytest.raises(irqlab.IrqlabError, match="unknown key"):
        irqlab.calibrate(root / "platforms" / "example.toml", ["cpu.nope=1..2"], targets=[targets])
    with pytest.raises(irqlab.IrqlabError, match="nothing to fit"):
        irqlab.calibrate(root / "platforms" / "example.toml", ["cpu.irq_entry_ns=1..2"])
