"""Issue 23's hostile inputs from Python: argument errors name the argument and its
range, IrqlabError pickles, Dask does not retry an input error, posted vectors outside the
handler's range are refused, and the wheel finds platform="example" anywhere."""

import os
import pickle

import pytest

import irqlab
import irqlab._sweep


def test_whole_number_arguments_name_themselves_and_their_range(job, platform):
    for bad in (-1, 2**200):
        with pytest.raises(ValueError, match=r"seed=.*: expected a whole number from 0 to 18446744073709551615"):
            irqlab.run(job, platform, seed=bad)
    with pytest.raises(ValueError, match=r"messages=1180591620717411303424: expected a whole number"):
        irqlab.burst(messages=2**70)
    with pytest.raises(TypeError, match=r"seed='1'"):
        irqlab.run(job, platform, seed="1")
    with pytest.raises(ValueError, match=r"workers=0: expected a whole number from 1"):
        irqlab.sweep(job, platform, ["seed=1,2"], workers=0)
    with pytest.raises(ValueError, match=r"disks=0: expected a whole number from 1 to 4096"):
        irqlab.run(job, platform, disks=0)
    with pytest.raises(ValueError, match=r"nr_events=0"):
        irqlab.Moderator("irq-am", nr_events=0)


def test_sets_of_the_wrong_shape_name_sets(job, platform):
    with pytest.raises(TypeError, match=r"sets: \('k', 1\) is not a KEY=VALUE string"):
        irqlab.run(job, platform, sets=[("k", 1)])
    with pytest.raises(ValueError, match=r"sets=None: a sweep needs at least one key to vary"):
        irqlab.sweep(job, platform, None)


def test_irqlab_error_pickles(job, platform):
    with pytest.raises(irqlab.IrqlabError) as info:
        irqlab.run(job, platform, max_loop=0)
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is irqlab.IrqlabError and str(back) == str(info.value)


def test_an_input_error_comes_back_from_a_worker_as_a_value(job, platform):
    """A point refused by the simulator gives the same answer on every try: a Dask task
    returns it rather than raising (which Dask would retry), and the driver raises it."""
    plan = irqlab._native.SweepPlan(job, platform, ["job.runtime=1ms,700s"], 1, [])
    got = irqlab._sweep.run_point(plan.portable(), 1)
    assert isinstance(got, dict) and "600 s" in got["error"]
    assert isinstance(irqlab._sweep.run_point(plan.portable(), 0), list)
    with pytest.raises(irqlab.IrqlabError, match="600 s"):
        irqlab.sweep(job, platform, ["job.runtime=1ms,700s"], cluster="local", workers=1)


def test_posted_vectors_are_the_handlers_or_refused():
    d = irqlab.PostedDescriptor()
    with pytest.raises(ValueError, match=r"vector=3: expected a whole number from 32 to 234"):
        d.post(3)
    assert d.pending() == [], "a refused vector sets nothing"
    assert d.post(32) is True and d.pending() == [32]
    assert d.post(234) is False and d.pending() == [32, 234]
    with pytest.raises(ValueError, match=r"vector=235"):
        d.post(235)
    with pytest.raises(ValueError, match=r"max_loop=0"):
        d.demux(max_loop=0)


def test_the_wheel_finds_its_platforms_anywhere_and_says_where_it_looked(job, tmp_path, monkeypatch):
    data = os.path.join(os.path.dirname(irqlab.__file__), "data")
    assert os.path.isfile(os.path.join(data, "platforms", "example.toml")), "the wheel carries the platforms"
    assert os.path.isdir(os.path.join(data, "scenarios")), "and the scenarios"
    monkeypatch.chdir(tmp_path)
    assert irqlab.run(job, platform="example")["jobs"][0]["read"]["iops"] > 0
    with pytest.raises(irqlab.IrqlabError) as info:
        irqlab.run(job, platform="nope")
    msg = str(info.value)
    assert msg.startswith("platform 'nope' not found; tried "), msg
    tried = msg.split("tried ", 1)[1].split(", ")
    assert tried[0] == str(tmp_path / "platforms" / "nope.toml"), tried
    assert os.path.join(os.path.realpath(data), "platforms", "nope.toml") in [os.path.realpath(t) for t in tried] or any(
        t.startswith(data) for t in tried
    ), tried
    assert all(os.path.isabs(t) for t in tried), tried


def test_files_map_and_runs_cap_from_python(platform):
    r = irqlab.run("[a]\nioengine=libaio\nfilename=/dev/sdb\nsize=10g\n", platform, max_runtime="2ms", maps=["/dev/sd*=nvme2"])
    notes = {n["kind"]: n["text"] for n in r["x-irqlab"]["notes"]}
    assert notes["files"].startswith("/dev/sdb -> nvme2") and "--max-runtime 2ms" in notes["capped"]
    with pytest.raises(irqlab.IrqlabError, match="contradict"):
        irqlab.run("[a]\nioengine=io_uring\nfilename=/dev/nvme0n1\nruntime=1ms\n", platform, delivery="polled", coalesce="7,1")
