"""Type stubs of the native extension (crates/irqlab-py/src)."""

from typing import Callable, Dict, List, Optional, Sequence, Tuple

__version__: str

class IrqlabError(Exception):
    """A job, platform, option or run that irqlab refused; the message names the file or option."""

def add_data_dir(dir: str) -> None:
    """Look bare platform and scenario names up in DIR too (after the current directory)."""

def run_json(
    job: str,
    platform: str,
    policy: Sequence[Tuple[str, str]],
    sets: Sequence[str],
    disks: Optional[int] = None,
    jobs_per_disk: Optional[int] = None,
    vectors_per_cpu: Optional[int] = None,
    seed: Optional[int] = None,
    plus: bool = False,
    interrupts: bool = False,
    maps: Sequence[str] = ...,
    max_runtime: Optional[str] = None,
) -> str:
    """fio's JSON with "x-irqlab", as text (GIL released while simulating)."""

class SweepPlan:
    """A sweep's plan: point(i) is a pure function of the plan and i."""

    def __init__(
        self,
        job: str,
        platform: str,
        sets: Sequence[str],
        seed: int = 1,
        policy: Sequence[Tuple[str, str]] = ...,
        maps: Sequence[str] = ...,
        max_runtime: Optional[str] = None,
    ) -> None: ...
    @staticmethod
    def from_portable(text: str) -> "SweepPlan": ...
    def portable(self) -> str: ...
    def __len__(self) -> int: ...
    def point(self, i: int) -> List[float]:
        """Simulates point i (GIL released); its metrics in METRICS order."""
    def dims(self) -> List[Tuple[str, List[str], bool]]: ...
    def values(self, i: int) -> List[str]: ...
    def describe(self, i: int) -> str: ...
    def csv_header(self) -> str: ...
    def csv_row(self, i: int, metrics: Sequence[float]) -> str: ...

def sweep_metrics() -> List[Tuple[str, str]]: ...
def reproduce_json(
    names: Sequence[str], scenarios: str, seed: int = 1, threads: Optional[int] = None
) -> Tuple[str, List[str]]: ...
def eval_task(task: str) -> List[float]: ...

class Calibration:
    def __init__(
        self,
        platform: str,
        params: Sequence[str],
        targets: Sequence[str],
        scenarios: Sequence[str],
        scenarios_dir: str,
        max_evals: int = 60,
        seed: int = 1,
    ) -> None: ...
    def scenarios(self) -> int: ...
    def run_local(self, threads: Optional[int] = None) -> str: ...
    def run_with(self, evaluate: Callable[[List[str]], List[Optional[List[float]]]]) -> str: ...

class PostedDescriptor:
    """A posted-interrupt descriptor (PIR bits, ON, SN), as the IOMMU and the CPU share it."""

    def __init__(self, nv: Optional[int] = None, ndst: Optional[int] = None) -> None: ...
    def post(self, vector: int) -> bool:
        """Set the vector's PIR bit (32 to 234, the ones the handler dispatches; ValueError
        otherwise); True when ON went 0 -> 1 (send the notification)."""
    @property
    def on(self) -> bool: ...
    @property
    def sn(self) -> bool: ...
    def set_sn(self) -> None: ...
    def clear_sn(self) -> bool: ...
    def pending(self) -> List[int]: ...
    def demux(self, max_loop: int = 3) -> List[List[int]]:
        """The notification handler's rounds; each list is one round's dispatched vectors."""

class Moderator:
    """A per-queue adaptive moderator: "net-dim", "rdma-dim" or "irq-am"."""

    def __init__(self, kind: str, nr_events: Optional[int] = None) -> None: ...
    def on_event(self, now_ns: int, completions: int, bytes: int = 0) -> Optional[Dict[str, int]]: ...
    def ack(self) -> None: ...
    def step(self, samples: Sequence[Tuple[int, int, int]]) -> List[int]: ...
    @property
    def kind(self) -> str: ...
    @property
    def level(self) -> int: ...
    @property
    def profile(self) -> Tuple[int, int]: ...
    @property
    def levels(self) -> List[Tuple[int, int]]: ...
    @property
    def tune_state(self) -> str: ...
    @property
    def counters(self) -> Dict[str, int]: ...

def burst(
    vectors: int = 8,
    messages: int = 20000,
    max_loop: int = 3,
    seed: int = 1,
    gap_ns: int = 800,
    handler_ns: int = 500,
    notify_ns: int = 600,
    round_ns: int = 40,
) -> Tuple[str, Dict[str, Dict[str, object]]]: ...

def capture_json(
    dir: str,
    record: bool = False,
    target: Optional[str] = None,
    quick: bool = False,
    no_fio: bool = False,
    fio: Optional[str] = None,
) -> str:
    """A capture directory read (recorded first with record=True), as JSON text."""

def platform_from_capture_json(
    dir: str,
    runs: Optional[Sequence[str]] = None,
    max_evals: int = 120,
    platforms: str = "platforms",
    seed: int = 1,
    threads: Optional[int] = None,
) -> str:
    """irqlab platform --from-capture: the platform, its fit and held-out runs, as JSON text."""

def advise_json(
    job: str,
    platform: str,
    objective: str = "iops",
    max_p99: Optional[str] = None,
    max_cpu: Optional[float] = None,
    window: Optional[str] = None,
    candidates: Optional[Sequence[str]] = None,
    maps: Sequence[str] = ...,
    seed: int = 1,
    threads: Optional[int] = None,
) -> str:
    """irqlab advise --output-format json, with "text", as JSON text (GIL released)."""
