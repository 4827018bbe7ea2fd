"""Your machine: record or read a capture, build a platform from it, and ask which
interrupt policy helps a job there (``irqlab capture``, ``irqlab platform
--from-capture`` and ``irqlab advise`` from Python)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Sequence, Union

import pandas as pd

from . import _native
from ._args import whole

PathLike = Union[str, "os.PathLike[str]"]

#: The columns of ``advise``'s DataFrame, best candidate first.
ADVISE_COLUMNS = [
    "name",
    "iops",
    "clat_p50_us",
    "clat_p99_us",
    "clat_mean_us",
    "cpu_per_io_us",
    "cpu_pct",
    "interrupts_per_s",
    "notifications_per_s",
    "tick_late_p99_us",
    "gain",
    "meets",
    "violates",
    "policy",
    "knob",
    "mainline",
]


def capture(
    dir: PathLike,
    *,
    record: bool = False,
    target: Optional[PathLike] = None,
    quick: bool = False,
    no_fio: bool = False,
    fio: Optional[PathLike] = None,
) -> Dict[str, Any]:
    """Read the capture in ``dir`` (``irqlab capture``'s layout or one laid out by hand),
    or with ``record=True`` record this machine into it first, as ``irqlab capture --out
    DIR`` does (``target``, ``quick``, ``no_fio``, ``fio`` as its options; fio runs take
    about 40 s, 12 s with ``quick``).

    Returns {"dir", "host" (topology, kernel, IOMMU, devices with queues and vectors),
    "runs" (name, device, iops, clat_mean_us, clat_p99_us, interrupts_per_s,
    ios_per_interrupt, cpu_pct, runtime_s), "skipped", "show" (``capture --show``'s
    text)}. Raises IrqlabError naming the file and what was expected there.
    """
    if not isinstance(record, bool):
        raise TypeError(f"record={record!r}: expected True or False")
    text = _native.capture_json(
        os.fspath(dir),
        record=record,
        target=None if target is None else os.fspath(target),
        quick=bool(quick),
        no_fio=bool(no_fio),
        fio=None if fio is None else os.fspath(fio),
    )
    return json.loads(text)


def platform_from_capture(
    dir: PathLike,
    *,
    out: Optional[PathLike] = None,
    runs: Optional[Sequence[str]] = None,
    max_evals: int = 120,
    platforms: PathLike = "platforms",
    seed: int = 1,
    threads: Optional[int] = None,
) -> Dict[str, Any]:
    """A platform file for the machine captured in ``dir``, as ``irqlab platform
    --from-capture DIR`` builds it: topology, devices and vectors from the capture, costs
    from the shared tables in ``platforms``, and the costs the runs pin fitted to them.
    ``runs`` fits to those runs only; the others are predicted (``held_out``). ``out``
    writes the platform file there.

    Returns {"machine", "platform_toml", "report", "used", "left_out", "fitted" (key,
    value, before, lo, hi, what, pins, at_bound, bound), "not_fitted", "in_sample" and
    "held_out" (run, metric, measured, model, error_pct), "evals"}.
    """
    max_evals = whole("max_evals", max_evals, 4, 100_000)
    seed = whole("seed", seed, 0, 2**64 - 1)
    threads = whole("threads", threads, 1, 1024, none=True)
    if runs is not None:
        if isinstance(runs, str):
            runs = [r for r in runs.split(",") if r]
        runs = list(runs)
        for r in runs:
            if not isinstance(r, str):
                raise TypeError(f"runs: {r!r} is not a run name; expected e.g. ['qd1-psync', 'qd32x2-libaio']")
    result = json.loads(
        _native.platform_from_capture_json(
            os.fspath(dir), runs=runs, max_evals=max_evals, platforms=os.fspath(platforms), seed=seed, threads=threads
        )
    )
    if out is not None:
        with open(os.fspath(out), "w") as f:
            f.write(result["platform_toml"])
    return result


def advise(
    job: PathLike,
    platform: PathLike = "example",
    *,
    objective: str = "iops",
    max_p99: Optional[str] = None,
    max_cpu: Optional[float] = None,
    window: Optional[str] = None,
    candidates: Optional[Sequence[str]] = None,
    maps: Optional[Sequence[str]] = None,
    seed: int = 1,
    threads: Optional[int] = None,
) -> pd.DataFrame:
    """Which interrupt policy helps ``job`` (a fio job file or its text) on ``platform``
    (a name or a file, e.g. one from ``platform_from_capture``), as ``irqlab advise``:
    every policy the platform and the job allow, simulated and ranked by ``objective``
    ("iops", "latency", "cpu") within ``max_p99`` ("200us", "1.5ms") and ``max_cpu``
    (percent of all the platform's CPUs). ``window`` is the simulated time per candidate
    ("20ms" by default); ``candidates`` tries only those (the stock kernel always);
    ``maps`` as ``--map``.

    Returns a DataFrame of the candidates, best first (columns ``ADVISE_COLUMNS``), with
    ``df.attrs`` holding "recommendation" (candidate, knob, policy, verdict, confidence),
    "excluded", "notes", "confidence" (the costs behind the answer and their basis) and
    "text" (what ``irqlab advise`` prints).
    """
    seed = whole("seed", seed, 0, 2**64 - 1)
    threads = whole("threads", threads, 1, 1024, none=True)
    if objective not in ("iops", "latency", "cpu"):
        raise ValueError(f"objective={objective!r}: expected 'iops', 'latency' or 'cpu'")
    if max_cpu is not None and (isinstance(max_cpu, bool) or not isinstance(max_cpu, (int, float))):
        raise TypeError(f"max_cpu={max_cpu!r}: expected a percentage above 0 and at most 100")
    if candidates is not None:
        candidates = [candidates] if isinstance(candidates, str) else list(candidates)
    if maps is not None:
        maps = [maps] if isinstance(maps, str) else list(maps)
    v = json.loads(
        _native.advise_json(
            os.fspath(job),
            os.fspath(platform),
            objective=objective,
            max_p99=None if max_p99 is None else str(max_p99),
            max_cpu=None if max_cpu is None else float(max_cpu),
            window=window,
            candidates=candidates,
            maps=maps or [],
            seed=seed,
            threads=threads,
        )
    )
    rows = []
    for r in v["rows"]:
        row = {k: r.get(k) for k in ADVISE_COLUMNS if k in r}
        row["meets"] = not r["violates"]
        row["violates"] = "; ".join(r["violates"])
        rows.append(row)
    df = pd.DataFrame(rows, columns=ADVISE_COLUMNS)
    for key in ("recommendation", "excluded", "notes", "confidence", "text", "verdict"):
        df.attrs[key] = v.get(key)
    return df
