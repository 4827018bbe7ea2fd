"""Where points and evaluations run: threads of this process, or a Dask cluster.

``cluster=None`` runs tasks on threads here (the native calls release the GIL);
``"local"`` starts a ``distributed.LocalCluster`` of worker processes for the call;
an address (``"tcp://host:8786"``) connects to a running scheduler; a
``distributed.Client`` is used as it is. Results come back as they finish, so a caller
can stream them to disk.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import os
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple


class Threads:
    """Tasks on a thread pool of this process."""

    def __init__(self, workers: Optional[int] = None):
        self.workers = workers or os.cpu_count() or 1

    def unordered(self, fn: Callable[..., Any], args: Sequence[tuple], retries: int = 0) -> Iterator[Tuple[int, Any]]:
        """(position in ``args``, result) as each task finishes."""
        with cf.ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = {pool.submit(fn, *a): k for k, a in enumerate(args)}
            try:
                for f in cf.as_completed(futures):
                    yield futures[f], f.result()
            finally:
                for f in futures:
                    f.cancel()

    def ordered(self, fn: Callable[..., Any], args: Sequence[tuple], retries: int = 0) -> List[Any]:
        out: List[Any] = [None] * len(args)
        for k, r in self.unordered(fn, args, retries):
            out[k] = r
        return out


class Dask:
    """Tasks on a Dask cluster through ``client``."""

    def __init__(self, client: Any):
        self.client = client

    def scatter(self, value: Any) -> Any:
        """``value`` sent to every worker once (tasks then refer to it)."""
        return self.client.scatter(value, broadcast=True)

    def _submit(self, fn: Callable[..., Any], args: Sequence[tuple], retries: int) -> list:
        columns = list(zip(*args)) if args else []
        return self.client.map(fn, *columns, retries=retries, pure=False)

    def unordered(self, fn: Callable[..., Any], args: Sequence[tuple], retries: int = 2) -> Iterator[Tuple[int, Any]]:
        from distributed import as_completed

        futures = self._submit(fn, args, retries)
        where = {f.key: k for k, f in enumerate(futures)}
        try:
            for f, result in as_completed(futures, with_results=True):
                yield where[f.key], result
        finally:
            self.client.cancel(futures)

    def ordered(self, fn: Callable[..., Any], args: Sequence[tuple], retries: int = 2) -> List[Any]:
        futures = self._submit(fn, args, retries)
        try:
            return self.client.gather(futures)
        finally:
            self.client.cancel(futures)


@contextlib.contextmanager
def engine(cluster: Any = None, workers: Optional[int] = None) -> Iterator[Any]:
    """The engine ``cluster`` names, closed (a local cluster shut down) on exit."""
    if cluster is None:
        yield Threads(workers)
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError("cluster=... needs Dask's distributed package: pip install 'irqlab[cluster]'") from e
    if isinstance(cluster, Client):
        yield Dask(cluster)
        return
    if cluster == "local":
        with LocalCluster(
            n_workers=workers or os.cpu_count() or 1,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as lc, Client(lc) as client:
            yield Dask(client)
        return
    if isinstance(cluster, str):
        with Client(cluster) as client:
            yield Dask(client)
        return
    raise TypeError(f"cluster must be None, 'local', a scheduler address or a distributed.Client, not {cluster!r}")
