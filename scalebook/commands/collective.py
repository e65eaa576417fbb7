"""`scalebook collective KIND`: time of one collective over axes of a TPU slice or GPU cluster."""
from __future__ import annotations

from .. import collectives, hardware, topology, units
from ..cli import add_json_flag, axes_arg, emit, flatten_axes, number_arg, whole_number
from ..errors import Error


def register(sub) -> None:
    p = sub.add_parser("collective", help="time of an AllGather, ReduceScatter, AllReduce, AllToAll or permute")
    p.add_argument("kind", help=f"one of: {', '.join(collectives.KINDS)} (or AllGather, ppermute, ...)")
    p.add_argument("--chip", required=True, help=f"one of: {', '.join(hardware.chip_names())}")
    p.add_argument("--topology", default=None,
                   help="TPU slice such as 16x16 or 4x4x8 (axes X, Y, Z); GPU: NVLink mesh such as 8 or 4x2")
    p.add_argument("--slices", type=whole_number, default=None, help="TPU: this many slices joined by DCN (axis D)")
    p.add_argument("--nodes", type=whole_number, default=None, help="GPU: this many nodes on InfiniBand (axes X, Y[, Z])")
    axes_arg(p, "mesh axes to run over: X, or X Y, or X,Y (repeating --axes adds axes)")
    p.add_argument("--bytes", required=True, type=number_arg("B"), help="V: bytes of the whole array, e.g. 1e9 or '2 GB'")
    p.add_argument("--hop-latency", default=None, type=number_arg("s", low_inclusive=True),
                   help="seconds per hop, e.g. 1e-6 or '1 us' (default 1 us)")
    add_json_flag(p)
    p.set_defaults(run=run)


def build_topology(chip: str, shape: "str | None", slices: "int | None", nodes: "int | None") -> topology.Topology:
    c = hardware.chip(chip)
    if c.is_tpu:
        if nodes is not None:
            raise Error("--nodes is for GPU clusters; for TPUs use --topology (and --slices)")
        if shape is None:
            raise Error(f"--topology is required for {c.name}, e.g. 16x16 (largest: {c.pod_topology})")
        return topology.multislice(c, shape, slices=slices) if slices is not None else topology.slice(c, shape)
    if slices is not None:
        raise Error("--slices is for TPUs; for GPU clusters use --nodes")
    if nodes is not None:
        if shape is not None:
            raise Error("give either --topology (one NVLink node) or --nodes (a cluster), not both")
        return topology.gpu_cluster(c, nodes=nodes)
    return topology.gpu_node(c, shape)


def run(args) -> int:
    topo = build_topology(args.chip, args.topology, args.slices, args.nodes)
    c = collectives.cost(args.kind, topo, axes=flatten_axes(args.axes), bytes_=args.bytes,
                         hop_latency_seconds=args.hop_latency)
    f = units.format_quantity
    data = {"kind": c.kind, "chip": topo.chip.name, "topology": topo.shape, "axes": list(c.axes),
            "group_size": c.group_size, "array_bytes": c.array_bytes, "bytes_per_device": c.bytes_per_device,
            "bytes_per_link": c.bytes_per_link, "hops": c.hops, "bandwidth_seconds": c.bandwidth_seconds,
            "latency_seconds": c.latency_seconds, "seconds": c.seconds, "regime": c.regime}
    emit(args, data, lambda: "\n".join([
        f"{collectives.label(c.kind)} over {' '.join(c.axes)} of {topo}",
        f"  V (whole array)    {f(c.array_bytes, 'B')}",
        f"  group size N       {c.group_size}",
        f"  sent per device    {f(c.bytes_per_device, 'B')}",
        f"  bandwidth time     {f(c.bandwidth_seconds, 's')}",
        f"  latency time       {f(c.latency_seconds, 's')} ({c.hops} hops)",
        f"  time               {f(c.seconds, 's')} ({c.regime}-bound)",
    ]))
    return 0
