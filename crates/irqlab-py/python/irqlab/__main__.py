"""``python -m irqlab sweep|calibrate ... --cluster ADDRESS``: the command line's sweep
and calibration on a Dask cluster.

The Rust ``irqlab`` binary cannot speak Dask's protocol (a Python client that ships
pickled Python functions), so the cluster choice lives here. The options are
``irqlab sweep``'s and ``irqlab calibrate``'s (a subset), and the CSV is the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from . import IrqlabError, calibrate, sweep

_POLICY = ("delivery", "max-loop", "coalesce", "moderator", "handler", "budget", "weight")


def _cluster(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", metavar="ADDRESS", help="'local' (a LocalCluster for this run) or a Dask scheduler address, e.g. tcp://host:8786; default: threads of this process")
    p.add_argument("--workers", type=int, metavar="N", help="threads, or local cluster processes (default: every core)")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m irqlab", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)

    s = sub.add_parser("sweep", help="simulate a grid of values (as `irqlab sweep`) on threads or a Dask cluster")
    s.add_argument("job", help="the fio job file")
    s.add_argument("--platform", required=True, help="platform file or bare name")
    s.add_argument("--set", dest="sets", action="append", required=True, metavar="KEY=VALUES")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--csv", required=True, metavar="FILE.csv", help="write the CSV here (points stream to FILE.csv.partial)")
    for opt in _POLICY:
        s.add_argument(f"--{opt}", help=f"base policy: as `irqlab run --{opt}`")
    s.add_argument("--reap-after-submit", action="store_true", default=None)
    s.add_argument("--flood-detection", action="store_true", default=None)
    _cluster(s)

    c = sub.add_parser("calibrate", help="fit platform parameters (as `irqlab calibrate`), evaluations on threads or a Dask cluster")
    c.add_argument("--platform", required=True)
    c.add_argument("--param", dest="params", action="append", required=True, metavar="KEY=LO..HI")
    c.add_argument("--targets", action="append", default=[], metavar="FILE")
    c.add_argument("--scenario", action="append", default=[], metavar="NAME")
    c.add_argument("--scenarios", default="scenarios")
    c.add_argument("--out", default="fitted.toml")
    c.add_argument("--max-evals", type=int, default=60)
    c.add_argument("--seed", type=int, default=1)
    _cluster(c)

    a = ap.parse_args(argv)
    try:
        if a.command == "sweep":
            policy = {k.replace("-", "_"): getattr(a, k.replace("-", "_")) for k in _POLICY}
            policy["reap_after_submit"] = a.reap_after_submit
            policy["flood_detection"] = a.flood_detection
            df = sweep(a.job, a.platform, a.sets, seed=a.seed, cluster=a.cluster, workers=a.workers, out=a.csv, **policy)
            print(f"{len(df)} points; wrote {a.csv}")
        else:
            r = calibrate(
                a.platform,
                a.params,
                targets=a.targets,
                scenarios=a.scenario,
                scenarios_dir=a.scenarios,
                max_evals=a.max_evals,
                seed=a.seed,
                out=a.out,
                cluster=a.cluster,
                workers=a.workers,
            )
            print(f"fitted parameters ({r['evals']} evaluations): {' '.join(r['sets'])}")
            print(r["residuals"].to_string(index=False))
            print(f"wrote {a.out}")
    except IrqlabError as e:
        print(f"irqlab: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
