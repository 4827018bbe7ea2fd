"""irqlab.run: the same data as `irqlab run --output-format json`, refused inputs, the GIL."""

import json
import subprocess
import threading

import pytest

import irqlab


def test_run_returns_the_cli_json(root, irqlab_bin):
    job = str(root / "examples" / "randread-libaio.fio")
    cli = subprocess.run(
        [irqlab_bin, "run", job, "--platform", "example", "--output-format", "json", "--delivery", "posted", "--seed", "7"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    got = irqlab.run(job, platform="example", delivery="posted", seed=7)
    assert got == json.loads(cli.stdout)
    assert got["jobs"][0]["read"]["iops"] > 0
    assert got["x-irqlab"]["policy"]["delivery"] == "posted"


def test_policy_sets_and_topology_change_the_run(job, platform):
    remapped = irqlab.run(job, platform)
    posted = irqlab.run(job, platform, delivery="posted", max_loop=5)
    assert sum(c["pmn"] for c in remapped["x-irqlab"]["cpus"]) == 0
    assert sum(c["pmn"] for c in posted["x-irqlab"]["cpus"]) > 0
    slow = irqlab.run(job, platform, sets={"cpu.irq_entry_ns": 5000})
    assert slow["x-irqlab"] != remapped["x-irqlab"]
    four = irqlab.run(job, platform, disks=4)
    assert len(four["jobs"]) == 8  # each of the two jobs once per disk


def test_every_policy_option_of_the_cli_is_a_keyword(root, irqlab_bin, job, platform):
    """Sagi Grimberg's irq_poll variant and feature 09h, as the command line takes them."""
    args = ["--handler", "irq-poll", "--irq-poll-until", "resched", "--coalesce", "7,1", "--coalesce-disable", "1"]
    cli = subprocess.run(
        [irqlab_bin, "run", job, "--platform", platform, "--output-format", "json", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    got = irqlab.run(job, platform, handler="irq-poll", irq_poll_until="resched", coalesce="7,1", coalesce_disable="1")
    assert got == json.loads(cli.stdout)
    with pytest.raises(irqlab.IrqlabError, match="irq_poll_until"):
        irqlab.run(job, platform, irq_poll_until="forever")


def test_job_text_works_like_a_file(job, platform):
    text = open(job).read()
    assert irqlab.run(text, platform) == irqlab.run(job, platform)


def test_bad_inputs_raise_with_the_file_or_option(job, platform):
    with pytest.raises(irqlab.IrqlabError, match="max_loop"):
        irqlab.run(job, platform, max_loop=0)
    with pytest.raises(irqlab.IrqlabError, match="carrier-pigeon"):
        irqlab.run(job, platform, delivery="carrier-pigeon")
    with pytest.raises(irqlab.IrqlabError, match="no such job file"):
        irqlab.run("no/such.fio", platform)
    with pytest.raises(irqlab.IrqlabError, match=r"<job text>:2"):
        irqlab.run("[a]\nfrobnicate=1\n", platform)
    with pytest.raises(irqlab.IrqlabError, match="platform 'nope' not found"):
        irqlab.run(job, "nope")
    with pytest.raises(TypeError, match="policy options"):
        irqlab.sweep(job, platform, ["seed=1"], colour="red")


def test_posted_delivery_is_refused_on_a_guest_platform(root):
    """Posted MSI is bare-metal only: a guest platform refuses it in run and in sweep."""
    job = str(root / "scenarios" / "c6" / "randread-libaio-batch16.fio")
    with pytest.raises(irqlab.IrqlabError, match="hyper-v guest: posted MSI is bare-metal only"):
        irqlab.run(job, "azure-l80sv2", delivery="posted")
    with pytest.raises(irqlab.IrqlabError, match="delivery=posted.*bare-metal only"):
        irqlab.sweep(job, "azure-l80sv2", {"delivery": ["remapped", "posted"]})
    assert irqlab.run(job, "azure-l80sv2")["jobs"][0]["read"]["iops"] > 0


def test_the_gil_is_released_while_simulating(root):
    """Python code runs in another thread while a simulation is in the native call."""
    job = str(root / "examples" / "randread-libaio.fio")
    done = threading.Event()
    ticks = 0

    def simulate():
        irqlab.run(job, "example")
        done.set()

    t = threading.Thread(target=simulate)
    t.start()
    while not done.is_set():
        ticks += 1
    t.join()
    # Holding the GIL for the whole run would leave this loop a switch interval or two.
    assert ticks > 10_000, ticks


def test_reproduce_one_experiment(root):
    df = irqlab.reproduce(["C6"], scenarios=root / "scenarios")
    assert list(df.columns[:6]) == ["experiment", "row", "metric", "published", "simulated", "error_pct"]
    # One row per [[target]] of the C6 scenario files.
    targets = sum(p.read_text().count("[[target]]") for p in (root / "scenarios" / "c6").glob("*.toml"))
    assert set(df["experiment"]) == {"C6"} and len(df) == targets >= 2
    assert (df["simulated"] > 0).all() and df.attrs["failed"] == []
    with pytest.raises(irqlab.IrqlabError, match="names no scenario"):
        irqlab.reproduce(["C99"], scenarios=root / "scenarios")
