"""irqlab from Python.

Interrupt delivery and moderation for fast I/O devices (posted MSI, lib/dim and irq-am
moderation, irq_poll, NVMe coalescing, polled I/O), simulated by irqlab's deterministic
discrete-event model:

>>> import irqlab
>>> r = irqlab.run("examples/randread-libaio.fio", platform="example")
>>> r["jobs"][0]["read"]["iops"]            # fio's JSON, as `irqlab run --output-format json`

``sweep`` runs a grid of points on threads here, on a local Dask cluster
(``cluster="local"``) or on an existing one (``cluster="tcp://host:8786"``) and returns a
pandas DataFrame; its CSV is byte for byte the one ``irqlab sweep`` writes. ``calibrate``
fits platform parameters with Nelder-Mead and evaluates its simplex points on the same
engines. ``PostedDescriptor`` and ``Moderator`` are the core mechanisms on their own.
Every call that simulates releases the GIL.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import pandas as pd

from . import _native
from ._native import IrqlabError, Moderator, PostedDescriptor
from ._calibrate import calibrate
from ._sweep import METRICS, sweep

__all__ = [
    "IrqlabError",
    "METRICS",
    "Moderator",
    "PostedDescriptor",
    "burst",
    "calibrate",
    "reproduce",
    "run",
    "sweep",
]
__version__ = _native.__version__

Sets = Union[Mapping[str, Any], Sequence[str], None]

_POLICY_KEYS = (
    "delivery",
    "max_loop",
    "coalesce",
    "moderator",
    "handler",
    "budget",
    "weight",
    "reap_after_submit",
    "flood_detection",
)


def _text(value: Any) -> str:
    """A keyword value as the command line would spell it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(_text(v) for v in value)
    return str(value)


def _policy(options: Mapping[str, Any]) -> List[tuple]:
    """(key, value) pairs of the policy options given (None: the default)."""
    out = []
    for key, value in options.items():
        if value is None:
            continue
        if key.replace("-", "_") not in _POLICY_KEYS:
            raise TypeError(f"unexpected keyword argument {key!r}; policy options are {', '.join(_POLICY_KEYS)}")
        out.append((key, _text(value)))
    return out


def _sets(sets: Sets) -> List[str]:
    """Platform overrides as KEY=VALUE strings, from a dict or a list of strings."""
    if sets is None:
        return []
    if isinstance(sets, Mapping):
        return [f"{k}={_text(v)}" for k, v in sets.items()]
    if isinstance(sets, str):
        return [sets]
    return [str(s) for s in sets]


def _path(value: Union[str, "os.PathLike[str]"]) -> str:
    return os.fspath(value)


def _look_up(name: Union[str, "os.PathLike[str]"], folder: str, suffix: str = "") -> str:
    """A bare name (``"example"``, ``"scenarios"``) in ``folder`` of the current directory,
    else of a directory above the Python environment (a venv inside the repository, as
    ``make test`` makes one, finds the repository's); anything else as given."""
    name = os.fspath(name)
    if os.path.exists(name) or "/" in name or os.sep in name or (suffix and name.endswith(suffix)):
        return name
    rel = os.path.join(folder, name + suffix) if folder else name
    if os.path.exists(rel):
        return rel
    d = os.path.abspath(sys.prefix)
    while True:
        cand = os.path.join(d, rel)
        if os.path.exists(cand):
            return cand
        parent = os.path.dirname(d)
        if parent == d:
            return name
        d = parent


def _platform(name: Union[str, "os.PathLike[str]"]) -> str:
    return _look_up(name, "platforms", ".toml")


def run(
    job: Union[str, "os.PathLike[str]"],
    platform: Union[str, "os.PathLike[str]"] = "example",
    *,
    delivery: Optional[str] = None,
    moderator: Optional[str] = None,
    coalesce: Optional[str] = None,
    handler: Optional[str] = None,
    max_loop: Optional[int] = None,
    budget: Optional[int] = None,
    weight: Optional[int] = None,
    reap_after_submit: Optional[bool] = None,
    flood_detection: Optional[bool] = None,
    sets: Sets = None,
    disks: Optional[int] = None,
    jobs_per_disk: Optional[int] = None,
    vectors_per_cpu: Optional[int] = None,
    seed: Optional[int] = None,
    plus: bool = False,
    interrupts: bool = False,
) -> Dict[str, Any]:
    """Simulate a fio job and return what ``irqlab run --output-format json`` prints.

    job: a fio job file, or the job text itself.
    platform: a platform file, or a bare name ("example" is platforms/example.toml,
        looked up in the current directory and above the interpreter).
    delivery, moderator, coalesce, handler, max_loop, budget, weight,
    reap_after_submit, flood_detection: the policy, as ``irqlab run``'s options
        (``delivery="posted"``, ``moderator="net-dim"``, ``coalesce="7,1"``).
    sets: platform overrides, ``{"cpu.irq_entry_ns": 300}`` or ``["cpu.irq_entry_ns=300"]``.
    disks, jobs_per_disk, vectors_per_cpu: topology knobs (``--disks`` ...).
    seed: as ``--seed`` (every stream, the jobs' randseed included).
    plus: fio's json+ (clat_ns bins). interrupts: add ``x-irqlab.proc_interrupts``.

    Returns fio's JSON as Python objects, with the ``x-irqlab`` section. Raises
    IrqlabError naming the file, line or option when an input is refused.
    """
    policy = _policy(
        {
            "delivery": delivery,
            "moderator": moderator,
            "coalesce": coalesce,
            "handler": handler,
            "max_loop": max_loop,
            "budget": budget,
            "weight": weight,
            "reap_after_submit": reap_after_submit,
            "flood_detection": flood_detection,
        }
    )
    text = _native.run_json(
        _path(job),
        _platform(platform),
        policy,
        _sets(sets),
        disks=disks,
        jobs_per_disk=jobs_per_disk,
        vectors_per_cpu=vectors_per_cpu,
        seed=seed,
        plus=plus,
        interrupts=interrupts,
    )
    return json.loads(text)


def reproduce(
    names: Iterable[str] = (),
    *,
    scenarios: Union[str, "os.PathLike[str]"] = "scenarios",
    seed: int = 1,
    threads: Optional[int] = None,
) -> pd.DataFrame:
    """Published against simulated, as ``irqlab reproduce --format json``.

    names: experiments ("C1"), scenario file stems or paths; every scenario when empty.
    Returns a DataFrame with experiment, row, metric, published, simulated, error_pct and
    source. Scenarios that could not run are listed in ``df.attrs["failed"]``.
    """
    rows, failed = _native.reproduce_json(list(names), _look_up(scenarios, ""), seed=seed, threads=threads)
    df = pd.DataFrame(json.loads(rows), columns=["experiment", "row", "metric", "published", "simulated", "error_pct", "source"])
    df.attrs["failed"] = list(failed)
    return df


def burst(**kwargs: Any) -> Dict[str, Any]:
    """``irqlab demo``: a seeded burst replayed through remapped and posted delivery.

    Keyword arguments as ``irqlab demo``'s options (vectors, messages, max_loop, seed,
    gap_ns, handler_ns, notify_ns, round_ns). Returns {"remapped": {...}, "posted": {...},
    "text": what ``irqlab demo`` prints}.
    """
    text, outcome = _native.burst(**kwargs)
    outcome["text"] = text
    return outcome
