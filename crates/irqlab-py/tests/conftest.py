"""Shared fixtures: the repository, the `irqlab` binary built by cargo, a small job."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]

# Two disks, 1 ms: small enough that a grid of a few points runs in seconds in debug.
JOB = """[global]
ioengine=libaio
direct=1
rw=randread
bs=4k
iodepth=4
time_based
runtime=1ms
[a]
filename=/dev/nvme0n1
cpus_allowed=0
[b]
filename=/dev/nvme1n1
cpus_allowed=1
"""


@pytest.fixture(scope="session")
def root() -> pathlib.Path:
    return ROOT


@pytest.fixture(scope="session")
def irqlab_bin() -> str:
    """The command line to compare with: $IRQLAB_BIN, or cargo's debug build."""
    path = os.environ.get("IRQLAB_BIN") or str(ROOT / "target" / "debug" / "irqlab")
    if not os.path.exists(path):
        subprocess.run(["cargo", "build", "-p", "irqlab"], cwd=ROOT, check=True)
    return path


@pytest.fixture
def job(tmp_path: pathlib.Path) -> str:
    p = tmp_path / "two.fio"
    p.write_text(JOB)
    return str(p)


@pytest.fixture
def platform(root: pathlib.Path) -> str:
    return str(root / "platforms" / "example.toml")


def cli_sweep_csv(irqlab_bin: str, job: str, platform: str, sets, out: pathlib.Path, *extra: str) -> bytes:
    """The CSV `irqlab sweep` writes for this grid."""
    argv = [irqlab_bin, "sweep", job, "--platform", platform, "--csv", str(out)]
    for s in sets:
        argv += ["--set", s]
    subprocess.run(argv + list(extra), check=True, capture_output=True)
    return out.read_bytes()
