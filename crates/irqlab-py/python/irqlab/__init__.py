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
``capture``, ``platform_from_capture`` and ``advise`` are your machine: its capture, a
platform built from it, and which interrupt policy helps a job there.
Every call that simulates releases the GIL.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import pandas as pd

from . import _native
from ._args import whole as _whole
from ._native import IrqlabError, Moderator, PostedDescriptor
from ._calibrate import calibrate
from ._machine import ADVISE_COLUMNS, advise, capture, platform_from_capture
from ._sweep import METRICS, sweep

# The error pickles (Dask carries it back from a worker): pickle finds the class by its
# module and name, which must be where users import it from.
IrqlabError.__module__ = "irqlab"

# The platforms and scenarios the wheel carries, so platform="example" works anywhere.
_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
if os.path.isdir(_DATA):
    _native.add_data_dir(_DATA)

__all__ = [
    "ADVISE_COLUMNS",
    "IrqlabError",
    "METRICS",
    "Moderator",
    "PostedDescriptor",
    "advise",
    "burst",
    "calibrate",
    "capture",
    "platform_from_capture",
    "reproduce",
    "run",
    "sweep",
]
__version__ = _native.__version__

Sets = Union[Mapping[str, Any], Sequence[str], None]

_POLICY_KEYS = (
    "delivery",
    "max_loop",
    "notification",
    "coalesce",
    "coalesce_disable",
    "moderator",
    "handler",
    "budget",
    "weight",
    "irq_poll_until",
    "defer_hard_irqs",
    "gro_flush_timeout",
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
    out = []
    for s in sets:
        if not isinstance(s, str):
            raise TypeError(
                f"sets: {s!r} is not a KEY=VALUE string; expected a dict "
                '{"cpu.irq_entry_ns": 300} or a list of strings ["cpu.irq_entry_ns=300"]'
            )
        out.append(s)
    return out


def _maps(maps: Optional[Sequence[str]]) -> List[str]:
    """``--map`` rules as PATTERN=DEVICE strings."""
    if maps is None:
        return []
    if isinstance(maps, str):
        return [maps]
    out = []
    for m in maps:
        if not isinstance(m, str):
            raise TypeError(f"maps: {m!r} is not a PATTERN=DEVICE string; expected e.g. ['/dev/sd*=nvme1']")
        out.append(m)
    return out


def _path(value: Union[str, "os.PathLike[str]"]) -> str:
    return os.fspath(value)


def _look_up(name: Union[str, "os.PathLike[str]"], folder: str = "", suffix: str = "") -> str:
    """A platform or scenario directory as given: irqlab looks bare names up itself (the
    current directory, the data the wheel carries, then above the interpreter) and says
    every path it tried when none has it."""
    return os.fspath(name)


def _platform(name: Union[str, "os.PathLike[str]"]) -> str:
    return _look_up(name)


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
    notification: Optional[str] = None,
    coalesce_disable: Optional[str] = None,
    irq_poll_until: Optional[str] = None,
    defer_hard_irqs: Optional[int] = None,
    gro_flush_timeout: Optional[str] = None,
    sets: Sets = None,
    disks: Optional[int] = None,
    jobs_per_disk: Optional[int] = None,
    vectors_per_cpu: Optional[int] = None,
    seed: Optional[int] = None,
    plus: bool = False,
    interrupts: bool = False,
    maps: Optional[Sequence[str]] = None,
    max_runtime: Optional[str] = None,
) -> Dict[str, Any]:
    """Simulate a fio job and return what ``irqlab run --output-format json`` prints.

    job: a fio job file, or the job text itself.
    platform: a platform file, or a bare name ("example" is platforms/example.toml,
        looked up in the current directory and above the interpreter).
    delivery, moderator, coalesce, handler, max_loop, budget, weight,
    reap_after_submit, flood_detection, notification, coalesce_disable, irq_poll_until,
    defer_hard_irqs, gro_flush_timeout: the policy, as ``irqlab run``'s options
        (``delivery="posted"``, ``moderator="net-dim"``, ``coalesce="7,1"``,
        ``irq_poll_until="resched"``).
    sets: platform overrides, ``{"cpu.irq_entry_ns": 300}`` or ``["cpu.irq_entry_ns=300"]``.
    disks, jobs_per_disk, vectors_per_cpu: topology knobs (``--disks`` ...).
    seed: as ``--seed`` (every stream, the jobs' randseed included).
    plus: fio's json+ (clat_ns bins). interrupts: add ``x-irqlab.proc_interrupts``.
    maps: ``["/dev/sd*=nvme1"]``, as ``--map``: where the job's own files go (other names
        the platform lacks take its devices in order of first appearance).
    max_runtime: ``"5ms"``, as ``--max-runtime``: every job's runtime capped there.

    Returns fio's JSON as Python objects, with the ``x-irqlab`` section. Raises
    IrqlabError naming the file, line or option when an input is refused.
    """
    seed = _whole("seed", seed, 0, 2**64 - 1, none=True)
    disks = _whole("disks", disks, 1, 4096, none=True)
    jobs_per_disk = _whole("jobs_per_disk", jobs_per_disk, 1, 4096, none=True)
    vectors_per_cpu = _whole("vectors_per_cpu", vectors_per_cpu, 0, 256, none=True)
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
            "notification": notification,
            "coalesce_disable": coalesce_disable,
            "irq_poll_until": irq_poll_until,
            "defer_hard_irqs": defer_hard_irqs,
            "gro_flush_timeout": gro_flush_timeout,
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
        maps=_maps(maps),
        max_runtime=max_runtime,
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
    seed = _whole("seed", seed, 0, 2**64 - 1)
    threads = _whole("threads", threads, 1, 1024, none=True)
    rows, failed = _native.reproduce_json(list(names), _look_up(scenarios), seed=seed, threads=threads)
    df = pd.DataFrame(json.loads(rows), columns=["experiment", "row", "metric", "published", "simulated", "error_pct", "source"])
    df.attrs["failed"] = list(failed)
    return df


def burst(**kwargs: Any) -> Dict[str, Any]:
    """``irqlab demo``: a seeded burst replayed through remapped and posted delivery.

    Keyword arguments as ``irqlab demo``'s options (vectors, messages, max_loop, seed,
    gap_ns, handler_ns, notify_ns, round_ns). Returns {"remapped": {...}, "posted": {...},
    "text": what ``irqlab demo`` prints}.
    """
    ranges = {
        "vectors": (1, 2**32 - 1),
        "messages": (1, 2**64 - 1),
        "max_loop": (1, 2**32 - 1),
        "seed": (0, 2**64 - 1),
        "gap_ns": (0, 2**64 - 1),
        "handler_ns": (0, 2**64 - 1),
        "notify_ns": (0, 2**64 - 1),
        "round_ns": (0, 2**64 - 1),
    }
    for key, value in kwargs.items():
        if key not in ranges:
            raise TypeError(f"burst() got an unexpected keyword argument {key!r}; expected one of {', '.join(ranges)}")
        kwargs[key] = _whole(key, value, *ranges[key])
    text, outcome = _native.burst(**kwargs)
    outcome["text"] = text
    return outcome
