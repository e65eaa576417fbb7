"""`scalebook plan MODEL --chip C --chips N --batch-tokens T --seq-len L [--top K]` (Chapters 5, 6).

Searches every parallel strategy (`planner.plan`), prints the fastest that fit and the
time-memory Pareto front; `--json` gives `considered`, `fitting`, and `best` / `pareto` as lists
of `train-estimate --json` objects.
"""
from __future__ import annotations

from .. import models
from ..cli import add_json_flag, emit, table
from .train_estimate import add_common, batch_kwargs, whole


def register(sub) -> None:
    p = sub.add_parser("plan", help="search all parallel strategies for a training run and rank them")
    add_common(p)
    p.add_argument("--top", type=whole, default=5, help="how many of the fastest strategies to show (default 5)")
    add_json_flag(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from .. import planner

    model = models.from_spec(args.model)
    p = planner.plan(model, seq_len=args.seq_len, chip=args.chip, chips=args.chips, top=args.top,
                     efficiency=args.efficiency, **batch_kwargs(args))
    data = {"model": p.model_name, "chip": p.chip_name, "chips": p.chips, "batch_tokens": p.batch_tokens,
            "seq_len": p.seq_len, "considered": p.considered, "fitting": p.fitting,
            "best": [e.to_dict() for e in p.best], "pareto": [e.to_dict() for e in p.pareto]}

    def text() -> str:
        head = str(p).splitlines()[0]
        return (f"{head}\n\nfastest:\n{table(p.rows('best'))}\n\n"
                f"time-memory Pareto front:\n{table(p.rows('pareto'))}")

    emit(args, data, text)
    return 0
