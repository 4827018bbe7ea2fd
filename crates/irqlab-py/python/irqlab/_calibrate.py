"""``irqlab.calibrate``: Nelder-Mead over platform parameters, its evaluations on an
engine. The simplex's first points and every shrink step are batches of evaluations,
each batch a set of self-contained tasks (one scenario under one candidate platform,
JSON), so a Dask cluster runs them at once; the fit is the same wherever they ran.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import pandas as pd

from . import _native
from ._engine import engine


def eval_task(task: str) -> Optional[List[float]]:
    """One evaluation task's metrics, or None when its simulation failed (a Dask task)."""
    try:
        return _native.eval_task(task)
    except _native.IrqlabError:
        return None


def calibrate(
    platform: Union[str, "os.PathLike[str]"],
    params: Union[Sequence[str], Dict[str, tuple]],
    *,
    targets: Iterable[Union[str, "os.PathLike[str]"]] = (),
    scenarios: Iterable[str] = (),
    scenarios_dir: Union[str, "os.PathLike[str]"] = "scenarios",
    max_evals: int = 60,
    seed: int = 1,
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
    cluster: Any = None,
    workers: Optional[int] = None,
    retries: int = 2,
) -> Dict[str, Any]:
    """Fit platform parameters within bounds to measured or published values.

    platform: the platform file (or bare name) to fit.
    params: ``["cpu.irq_entry_ns=100..600"]`` or ``{"cpu.irq_entry_ns": (100, 600)}``.
    targets: targets files (see ``irqlab calibrate --help``).
    scenarios: experiments or scenarios whose published figures are targets.
    cluster, workers: where the evaluations run, as in ``sweep``.
    out: also write the fitted platform file here.

    Returns {"params": [{"key", "value", "lo", "hi", "start", "integer"}], "sets",
    "evals", "objective", "residuals" (DataFrame), "platform_toml"}.
    """
    if isinstance(params, dict):
        params = [f"{k}={lo}..{hi}" for k, (lo, hi) in params.items()]
    from . import _look_up, _platform
    from ._args import whole

    max_evals = whole("max_evals", max_evals, 1, 100_000)
    seed = whole("seed", seed, 0, 2**64 - 1)
    workers = whole("workers", workers, 1, 4096, none=True)
    retries = whole("retries", retries, 0, 100)

    cal = _native.Calibration(
        _platform(platform),
        [str(p) for p in params],
        [os.fspath(t) for t in targets],
        list(scenarios),
        _look_up(scenarios_dir),
        max_evals=max_evals,
        seed=seed,
    )
    if cluster is None:
        text = cal.run_local(workers)
    else:
        with engine(cluster, workers) as eng:
            text = cal.run_with(lambda tasks: eng.ordered(eval_task, [(t,) for t in tasks], retries=retries))
    result = json.loads(text)
    result["residuals"] = pd.DataFrame(
        result["residuals"], columns=["experiment", "row", "metric", "published", "simulated", "error_pct", "source"]
    ).drop(columns=["source"])
    if out is not None:
        with open(out, "w") as f:
            f.write(result["platform_toml"])
    return result
