"""``irqlab.sweep``: a grid of points as tasks, streamed to disk, as a DataFrame.

Each point is a pure function of the plan and its index (``SweepPlan.point``), so it
gives the same numbers on a thread here or a Dask worker elsewhere, and the CSV is
written by the same Rust code as ``irqlab sweep``'s: the same grid and seed give the same
bytes whatever ran the points. With ``out=``, every finished point is appended to
``OUT.partial`` as it arrives; a sweep interrupted and started again with the same
arguments runs only the points missing there, then writes ``OUT`` and removes the
journal.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import pandas as pd

from . import _native
from ._engine import engine

#: Every metric of a sweep (CSV column order): (name, axis label with unit).
METRICS: List[tuple] = list(_native.sweep_metrics())

_plans: Dict[str, Any] = {}
_plans_lock = threading.Lock()


def _plan_of(portable: str) -> Any:
    """The plan of ``portable``, built once per worker process."""
    key = hashlib.sha256(portable.encode()).hexdigest()
    with _plans_lock:
        plan = _plans.get(key)
        if plan is None:
            plan = _native.SweepPlan.from_portable(portable)
            _plans.clear()
            _plans[key] = plan
        return plan


def run_point(portable: str, i: int) -> Any:
    """Point ``i`` of the plan ``portable``: its metrics (a Dask task), or
    ``{"error": message}`` when irqlab refused it: an input error gives the same answer
    on every try, so it comes back as a value, not as an exception Dask would retry."""
    try:
        return _plan_of(portable).point(i)
    except _native.IrqlabError as e:
        return {"error": str(e)}


def _grid(sets: Union[Mapping[str, Any], Sequence[str], str]) -> List[str]:
    """``--set`` strings from {key: "1..8:*2" | [v1, v2] | value} or a list of strings."""
    shapes = 'expected {"delivery": ["remapped", "posted"]} or ["delivery=remapped,posted"]'
    if sets is None:
        raise ValueError(f"sets=None: a sweep needs at least one key to vary; {shapes}")
    if isinstance(sets, str):
        return [sets]
    if isinstance(sets, Mapping):
        out = []
        for k, v in sets.items():
            if isinstance(v, (list, tuple, range)):
                v = ",".join("true" if x is True else "false" if x is False else str(x) for x in v)
            out.append(f"{k}={v}")
        return out
    out = []
    for s in sets:
        if not isinstance(s, str):
            raise TypeError(f"sets: {s!r} is not a KEY=VALUES string; {shapes}")
        out.append(s)
    return out


class _Journal:
    """Finished points of one plan, one JSON line each, flushed as they arrive."""

    def __init__(self, path: str, plan_id: str):
        self.path = path
        self.done: Dict[int, List[float]] = {}
        if os.path.exists(path):
            with open(path) as f:
                lines = f.read().splitlines()
            if lines and json.loads(lines[0]).get("plan") == plan_id:
                for line in lines[1:]:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        break  # a line cut by the interruption: that point runs again
                    self.done[int(rec["i"])] = [float(x) for x in rec["metrics"]]
        self.file = open(path, "w")
        self.file.write(json.dumps({"plan": plan_id}) + "\n")
        for i, m in sorted(self.done.items()):
            self.file.write(json.dumps({"i": i, "metrics": m}) + "\n")
        self.file.flush()

    def add(self, i: int, metrics: List[float]) -> None:
        self.file.write(json.dumps({"i": i, "metrics": metrics}) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def _frame(plan: Any, results: Dict[int, List[float]]) -> pd.DataFrame:
    """One row per point: the swept keys (numbers where every value is one), then the
    metrics at full precision."""
    data: Dict[str, list] = {}
    n = len(plan)
    rows = [plan.values(i) for i in range(n)]
    for d, (key, values, numeric) in enumerate(plan.dims()):
        col = [r[d] for r in rows]
        if numeric:
            as_int = all(float(v).is_integer() and "." not in v and "e" not in v.lower() for v in values)
            data[key] = [int(v) if as_int else float(v) for v in col]
        else:
            data[key] = col
    for m, (name, _label) in enumerate(METRICS):
        data[name] = [results[i][m] for i in range(n)]
    return pd.DataFrame(data)


def sweep(
    job: Union[str, "os.PathLike[str]"],
    platform: Union[str, "os.PathLike[str]"],
    sets: Union[Mapping[str, Any], Sequence[str], str],
    *,
    seed: int = 1,
    cluster: Any = None,
    workers: Optional[int] = None,
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
    retries: int = 2,
    on_point: Optional[Callable[[int, List[float]], None]] = None,
    maps: Optional[Sequence[str]] = None,
    max_runtime: Optional[str] = None,
    **policy: Any,
) -> pd.DataFrame:
    """Simulate every point of a grid, as ``irqlab sweep`` does; return a DataFrame.

    job, platform: as in ``run``.
    sets: the grid, ``{"delivery": ["remapped", "posted"], "job.iodepth": "1..64:*2"}``
        or ``["delivery=remapped,posted", "job.iodepth=1..64:*2"]`` (the first key varies
        slowest, as ``--set`` does).
    seed: the seed of every point (unless ``seed`` is swept).
    cluster: None (threads of this process), "local" (a Dask LocalCluster of ``workers``
        processes for this call), a scheduler address ("tcp://host:8786") or a
        ``distributed.Client``.
    workers: threads, or local cluster processes (default: every core).
    out: write the CSV here (the same bytes as ``irqlab sweep --csv``); points stream to
        ``OUT.partial`` as they finish, and a sweep started again after an interruption
        runs only the points missing there.
    retries: times a task that raised is run again on the cluster (a task lost with its
        worker is rescheduled by Dask itself).
    on_point: called with (index, metrics) as each point finishes, in the driver.
    maps, max_runtime: as in ``run``.
    **policy: the base policy (``delivery="posted"``, ``moderator="net-dim"``, ...).

    Returns one row per point in grid order: the swept keys, then every metric of
    ``METRICS``.
    """
    from . import _maps, _platform, _policy
    from ._args import whole

    seed = whole("seed", seed, 0, 2**64 - 1)
    workers = whole("workers", workers, 1, 4096, none=True)
    retries = whole("retries", retries, 0, 100)
    plan = _native.SweepPlan(
        os.fspath(job), _platform(platform), _grid(sets), seed, _policy(policy), _maps(maps), max_runtime
    )
    portable = plan.portable()
    plan_id = hashlib.sha256(portable.encode()).hexdigest()
    n = len(plan)
    journal = _Journal(os.fspath(out) + ".partial", plan_id) if out is not None else None
    results: Dict[int, List[float]] = dict(journal.done) if journal else {}
    todo = [i for i in range(n) if i not in results]
    refused: Optional[str] = None
    try:
        if todo:
            with engine(cluster, workers) as eng:
                if cluster is None:
                    tasks = [(i,) for i in todo]
                    stream = eng.unordered(plan.point, tasks)
                else:
                    spec = eng.scatter(portable)
                    stream = eng.unordered(run_point, [(spec, i) for i in todo], retries=retries)
                try:
                    for k, metrics in stream:
                        if isinstance(metrics, dict):
                            refused = metrics["error"]
                            break
                        i = todo[k]
                        results[i] = list(metrics)
                        if journal:
                            journal.add(i, results[i])
                        if on_point:
                            on_point(i, results[i])
                finally:
                    # The stream's tasks are cancelled while the cluster is still there.
                    stream.close()
    finally:
        if journal:
            journal.close()
    if refused is not None:
        raise _native.IrqlabError(refused)
    if out is not None:
        text = plan.csv_header() + "".join(plan.csv_row(i, results[i]) for i in range(n))
        tmp = os.fspath(out) + ".tmp"
        with open(tmp, "w", newline="") as f:
            f.write(text)
        os.replace(tmp, out)
        os.remove(journal.path)
    return _frame(plan, results)


def csv_text(
    job: Union[str, "os.PathLike[str]"],
    platform: Union[str, "os.PathLike[str]"],
    sets: Union[Mapping[str, Any], Sequence[str], str],
    frame: pd.DataFrame,
    *,
    seed: int = 1,
    **policy: Any,
) -> str:
    """The CSV ``irqlab sweep`` would write for ``frame`` (a ``sweep`` result)."""
    from . import _platform, _policy

    plan = _native.SweepPlan(os.fspath(job), _platform(platform), _grid(sets), seed, _policy(policy))
    names = [name for name, _ in METRICS]
    return plan.csv_header() + "".join(
        plan.csv_row(i, [float(x) for x in frame.loc[i, names]]) for i in range(len(plan))
    )
