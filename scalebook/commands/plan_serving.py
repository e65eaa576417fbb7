"""`scalebook plan-serving MODEL --chip C --latency-ms X --prompt-len P --output-len O` (Chapters 7, 8).

The configuration with the best output tokens/s per chip whose per-token latency meets the
target, the next best, and the latency/throughput frontier; `--json` lists them as
`serve-estimate --json` objects.
"""
from __future__ import annotations

from .. import models
from ..cli import add_json_flag, emit, number_arg, table
from .serve_estimate import add_serving_common
from .train_estimate import whole


def register(sub) -> None:
    p = sub.add_parser("plan-serving", help="best serving configuration for a per-token latency target")
    add_serving_common(p)
    p.add_argument("--latency-ms", required=True, type=number_arg("s", scale=1e-3),
                   help="per-output-token latency target in ms (or a time such as '20 ms')")
    p.add_argument("--max-chips", type=whole, default=256, help="largest deployment to consider (default 256)")
    p.add_argument("--top", type=whole, default=5, help="how many configurations to list (default 5)")
    add_json_flag(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from .. import serving

    model = models.from_spec(args.model)
    p = serving.plan_serving(model, chip=args.chip, latency_target_s=args.latency_ms / 1e3, prompt_len=args.prompt_len,
                             output_len=args.output_len, max_chips=args.max_chips, top=args.top,
                             bandwidth_efficiency=args.bandwidth_efficiency, compute_efficiency=args.compute_efficiency)
    data = {"model": p.model_name, "chip": p.chip_name, "latency_target_seconds": p.latency_target_seconds,
            "considered": p.considered, "meeting_target": p.meeting_target,
            "best": [e.to_dict() for e in p.best], "frontier": [e.to_dict() for e in p.frontier]}

    def text() -> str:
        head = str(p).splitlines()[0]
        best = table(p.rows("best")) if p.best else "(no configuration meets the target)"
        return f"{head}\n\nbest within the target:\n{best}\n\nlatency/throughput frontier:\n{table(p.rows('frontier'))}"

    emit(args, data, text)
    return 0
