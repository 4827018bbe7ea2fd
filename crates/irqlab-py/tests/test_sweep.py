"""irqlab.sweep on threads, on a local Dask cluster and with a worker lost mid-task, each
compared byte for byte with `irqlab sweep`'s CSV; an interrupted sweep resumes."""

import os
import subprocess
import sys

import cloudpickle
import pytest
from distributed import Client, LocalCluster, WorkerPlugin

import irqlab
from conftest import cli_sweep_csv

SETS = ["delivery=remapped,posted", "job.iodepth=1..4:*2"]


@pytest.fixture
def cli_csv(irqlab_bin, job, platform, tmp_path):
    return cli_sweep_csv(irqlab_bin, job, platform, SETS, tmp_path / "cli.csv")


def test_threads_give_the_cli_csv_and_a_dataframe(job, platform, tmp_path, cli_csv):
    out = tmp_path / "py.csv"
    df = irqlab.sweep(job, platform, {"delivery": ["remapped", "posted"], "job.iodepth": "1..4:*2"}, out=out)
    assert out.read_bytes() == cli_csv
    assert not os.path.exists(f"{out}.partial")
    assert list(df.columns[:2]) == ["delivery", "job.iodepth"] and len(df) == 6
    assert df["job.iodepth"].tolist() == [1, 2, 4, 1, 2, 4]
    assert [c for c in df.columns[2:]] == [m for m, _ in irqlab.METRICS]
    posted = df[df.delivery == "posted"]
    assert (posted["pmn_per_sec"] > 0).all()


def test_local_cluster_gives_the_cli_csv(job, platform, tmp_path, cli_csv):
    out = tmp_path / "dask.csv"
    irqlab.sweep(job, platform, SETS, cluster="local", workers=2, out=out)
    assert out.read_bytes() == cli_csv


class KillFirstTask(WorkerPlugin):
    """Kills the worker process that starts the first sweep task (once, cluster-wide)."""

    def __init__(self, marker):
        self.marker = marker

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and "run_point" in str(key):
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.close(fd)
            os._exit(1)


def test_a_task_lost_with_its_worker_runs_again(job, platform, tmp_path, cli_csv):
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    marker = tmp_path / "killed"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, Client(lc) as client:
        client.register_plugin(KillFirstTask(str(marker)))
        out = tmp_path / "lost.csv"
        irqlab.sweep(job, platform, SETS, cluster=client, out=out)
    assert marker.exists(), "a worker died in the middle of a task"
    assert out.read_bytes() == cli_csv


def test_an_interrupted_sweep_keeps_its_points_and_resumes(job, platform, tmp_path, cli_csv):
    out = tmp_path / "resumed.csv"
    seen = []

    def stop_after_three(i, metrics):
        seen.append(i)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        irqlab.sweep(job, platform, SETS, out=out, workers=1, on_point=stop_after_three)
    assert not out.exists()
    journal = open(f"{out}.partial").read().splitlines()
    assert len(journal) == 1 + 3, "a header and the three finished points"
    again = []
    irqlab.sweep(job, platform, SETS, out=out, workers=1, on_point=lambda i, m: again.append(i))
    assert sorted(again) == sorted(set(range(6)) - set(seen)), "only the missing points ran"
    assert out.read_bytes() == cli_csv


def test_python_entry_point_writes_the_cli_csv(root, job, platform, tmp_path, cli_csv):
    out = tmp_path / "entry.csv"
    argv = [sys.executable, "-m", "irqlab", "sweep", job, "--platform", platform, "--csv", str(out)]
    for s in SETS:
        argv += ["--set", s]
    subprocess.run(argv, check=True, capture_output=True)
    assert out.read_bytes() == cli_csv
    bad = subprocess.run(argv[:-2] + ["--set", "max_loop=0..2"], capture_output=True, text=True)
    assert bad.returncode == 2 and "max_loop=0" in bad.stderr
