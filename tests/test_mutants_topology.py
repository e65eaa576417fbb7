"""Topologies pinned by hand, written to kill mutants `make mutate` found surviving.

Figures of the published tables (Austin et al. 2025): TPU v5e ICI 45 GB/s one way per link,
90 GB/s both ways, 16x16 pods, 8 chips per host; TPU v5p ICI 90 / 180 GB/s, DCN 6.25 GB/s per
chip, 16x20x28 pods, 4 chips per host; H100 NVLink 450 GB/s per GPU, 8 GPUs per node with
8 x 400 Gbit/s NICs = 400 GB/s, 50 GB/s per GPU; the DGX H100 SuperPod puts 32 nodes under a
leaf (256 GPUs) and 4 leaves under the spine (1024 GPUs); GB200 NVL72 joins 72 GPUs by NVLink at
900 GB/s. A hop between neighbouring chips takes 1 us. NCCL 2.30.7's model (tuning.cc, topo.h):
3.4 us per NVLink ring step and 14 us per network ring step (Simple protocol); 20.6 of 25 GB/s per
NVLink 4 link usable (H100: 0.824), 40.1 of 50 on NVLink 5 (GB200: 0.802). Published v5e slices
(Cloud TPU docs): 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16.
"""
import pytest

from scalebook import Error, chip, topology
from scalebook.topology import Axis

US = 1e-6


def ici(name, size, wrap, one_way):
    return Axis(name=name, size=size, link="ici", wraparound=wrap,
                bytes_per_s=2 * one_way if wrap else one_way, one_way_bytes_per_s=one_way)


LATENCY = {"nvlink": 3.4e-6, "infiniband": 14e-6, "dcn": 14e-6}
EFFICIENCY = {"nvlink": 0.824}  # H100: 20.6 / 25; InfiniBand and DCN at their line rate


def switched(name, size, link, bytes_per_s):
    return Axis(name=name, size=size, link=link, wraparound=False, bytes_per_s=bytes_per_s,
                one_way_bytes_per_s=bytes_per_s, latency_seconds=LATENCY[link],
                bandwidth_efficiency=EFFICIENCY.get(link, 1.0))


# --- TPU slices and multislices ----------------------------------------------------------------

def test_a_slice_is_a_torus_with_a_one_microsecond_hop():
    t = topology.slice("tpu-v5e", "8x16")
    assert (t.chip, t.kind, t.hop_latency_seconds) == (chip("tpu-v5e"), "torus", US)
    assert t.axes == (ici("X", 8, False, 45e9), ici("Y", 16, True, 45e9))


def test_an_axis_of_one_chip_is_allowed_in_strings_and_tuples():
    assert topology.slice("tpu-v5e", "1x1").shape == "1x1"
    assert topology.slice("tpu-v5e", (1, 1)).shape == "1x1"


def test_a_published_shape_may_name_its_sides_in_either_order():
    assert topology.slice("tpu-v5e", "4x2").axis_sizes == {"X": 4, "Y": 2}


@pytest.mark.parametrize("shape, near", [("1x16", "4x4"), ("1x4", "2x2"), ("4x16", "8x8"), ("3x4", "2x4, 4x4")])
def test_a_shape_google_does_not_offer_is_refused_naming_the_published_ones_near_it(shape, near):
    with pytest.raises(Error, match=f"tpu-v5e has no {shape} slice .*near .*: .*{near}"):
        topology.slice("tpu-v5e", shape)


def test_a_v5p_line_of_16_chips_is_refused():
    with pytest.raises(Error, match="tpu-v5p has no 16 slice.*2x2x4"):
        topology.slice("tpu-v5p", "16")


@pytest.mark.parametrize("shape", [(4.0, 4), (True, 4), (4, "4")])
def test_a_tuple_size_must_be_an_integer(shape):
    with pytest.raises(Error, match="^bad size .* in slice shape .*; sizes are positive integers$"):
        topology.slice("tpu-v5e", shape)


@pytest.mark.parametrize("shape, message", [
    (5, "slice shape must be a string like '8x16' or a tuple of sizes, got 5"),
    ((0, 4), "bad size 0 in slice shape (0, 4); sizes are positive integers"),
    ((), "slice shape needs at least one size, e.g. '8x16'"),
])
def test_bad_shapes_say_what_is_wrong(shape, message):
    with pytest.raises(Error) as e:
        topology.slice("tpu-v5e", shape)
    assert str(e.value) == message


def test_a_slice_with_more_chips_than_the_pod_says_how_many_each_has():
    # 28 x 28 x 28 = 21952 chips, every side within the pod; a v5p pod of 16 x 20 x 28 has 8960
    with pytest.raises(Error) as e:
        topology.slice("tpu-v5p", "28x28x28")
    assert str(e.value).startswith("tpu-v5p has no 28x28x28 slice")
    assert str(e.value).endswith("16x16x24")  # the largest v5p slice, 6144 chips


@pytest.mark.parametrize("names", ["XY", ["X", "X"], ["X"], ["a b", "Y"], ["X", 2]])
def test_axis_names_must_be_distinct_identifiers_one_per_axis(names):
    with pytest.raises(Error, match="names"):
        topology.slice("tpu-v5e", "4x4", names=names)


def test_wrong_axis_names_are_refused_saying_how_many_are_needed():
    with pytest.raises(Error) as e:
        topology.slice("tpu-v5e", "4x4", names=["X", "X"])
    assert str(e.value) == "need 2 distinct axis names (identifiers) for a 2-axis topology, got ('X', 'X')"
    with pytest.raises(Error) as e:
        topology.slice("tpu-v5e", "4x4", names="XY")
    assert str(e.value) == "names must be a list of axis names such as ['X', 'Y'], got 'XY'"


def test_an_unknown_axis_lists_the_axes_there_are():
    with pytest.raises(Error) as e:
        topology.slice("tpu-v5e", "8x16").axis("Q")
    assert str(e.value) == "no mesh axis 'Q' in this 8x16 torus; valid: X, Y"


def test_a_multislice_keeps_each_slices_torus_and_adds_dcn_at_6_25_gb_s():
    t = topology.multislice("tpu-v5p", "4x4x4", slices=2)
    assert (t.chip, t.kind, t.hop_latency_seconds) == (chip("tpu-v5p"), "multislice", US)
    assert t.axes == (ici("X", 4, True, 90e9), ici("Y", 4, True, 90e9), ici("Z", 4, True, 90e9),
                      switched("D", 2, "dcn", 6.25e9))


def test_a_multislice_takes_names_for_its_slice_axes_and_its_dcn_axis():
    t = topology.multislice("tpu-v5e", "4x4", slices=2, names=["data", "model", "pod"])
    assert t.names == ("data", "model", "pod")


def test_a_multislice_of_one_slice_is_allowed():
    assert topology.multislice("tpu-v5e", "4x4", slices=1).axis_sizes == {"X": 4, "Y": 4, "D": 1}


@pytest.mark.parametrize("slices", [0, True, 2.0])
def test_slices_must_be_a_positive_integer(slices):
    with pytest.raises(Error, match=f"^slices must be a positive integer, got {slices!r}$"):
        topology.multislice("tpu-v5e", "4x4", slices=slices)


# --- GPU nodes and clusters --------------------------------------------------------------------

def test_a_gpu_node_split_into_mesh_axes_runs_each_at_the_full_nvlink_egress():
    t = topology.gpu_node("h100", "4x2", names=["data", "model"])
    assert (t.chip, t.kind, t.hop_latency_seconds) == (chip("h100"), "nvlink", US)
    assert t.axes == (switched("data", 4, "nvlink", 450e9), switched("model", 2, "nvlink", 450e9))


def test_a_gpu_mesh_bigger_than_the_node_is_refused():
    with pytest.raises(Error) as e:
        topology.gpu_node("h100", "4x4")
    assert str(e.value) == "mesh '4x4' has 16 GPUs; one h100 NVLink domain has 8"
    with pytest.raises(Error, match="^bad size 'q' in NVLink mesh '4xq'"):
        topology.gpu_node("h100", "4xq")


def test_a_tpu_is_refused_where_a_gpu_is_needed_naming_the_tpu_constructors():
    with pytest.raises(Error) as e:
        topology.gpu_node("tpu-v5e")
    assert str(e.value) == ("tpu-v5e is a TPU: use topology.slice or topology.multislice; NVLink nodes are for "
                            "GPUs (a100, h100, h200, b200, gb200)")


def test_a_superpod_of_64_nodes_is_two_leaves_of_32_on_infiniband():
    t = topology.gpu_cluster("h100", nodes=64)
    assert (t.chip, t.kind, t.hop_latency_seconds) == (chip("h100"), "cluster", US)
    assert t.axes == (switched("X", 8, "nvlink", 450e9), switched("Y", 32, "infiniband", 50e9),
                      switched("Z", 2, "infiniband", 50e9))
    assert t.shape == "8x32x2"


def test_one_full_leaf_has_no_spine_axis():
    assert topology.gpu_cluster("h100", nodes=32).shape == "8x32"


def test_smaller_leaves_can_be_asked_for():
    assert topology.gpu_cluster("h100", nodes=8, nodes_per_leaf=4).axis_sizes == {"X": 8, "Y": 4, "Z": 2}


def test_a_cluster_of_one_node_is_allowed():
    assert topology.gpu_cluster("h100", nodes=1, nodes_per_leaf=1).axis_sizes == {"X": 8, "Y": 1}


@pytest.mark.parametrize("kwargs, label", [
    ({"nodes": 0}, "nodes"), ({"nodes": True}, "nodes"), ({"nodes": 2.0}, "nodes"),
    ({"nodes": 8, "nodes_per_leaf": 0}, "nodes_per_leaf"), ({"nodes": 8, "nodes_per_leaf": 4.0}, "nodes_per_leaf"),
])
def test_node_counts_must_be_positive_integers(kwargs, label):
    with pytest.raises(Error, match=f"^{label} must be a positive integer, got "):
        topology.gpu_cluster("h100", **kwargs)


def test_superpod_levels_are_node_leaf_and_spine():
    levels = topology.superpod_levels()
    assert [(lv["level"], lv["gpus"]) for lv in levels] == [("Node", 8), ("Leaf (SU)", 256), ("Spine", 1024)]


# --- the natural topology of a mesh ------------------------------------------------------------

def test_a_tpu_mesh_becomes_a_slice_named_after_the_mesh():
    t = topology.for_mesh("tpu-v5e", {"data": 8, "model": 16})
    assert (t.chip, t.kind) == (chip("tpu-v5e"), "torus")
    assert t.axes == (ici("data", 8, False, 45e9), ici("model", 16, True, 45e9))


def test_gpu_axes_that_together_fill_the_node_are_all_nvlink():
    t = topology.for_mesh("h100", {"X": 2, "Y": 4})
    assert (t.chip, t.kind, t.hop_latency_seconds) == (chip("h100"), "nvlink", US)
    assert t.axes == (switched("X", 2, "nvlink", 450e9), switched("Y", 4, "nvlink", 450e9))


def test_gpu_axes_beyond_the_node_cross_infiniband():
    # Y (4) and X (2) fill the 8-GPU node; D crosses nodes at 400 GB/s / 8 GPUs
    t = topology.for_mesh("h100", {"D": 2, "X": 2, "Y": 4})
    assert (t.chip, t.kind, t.hop_latency_seconds) == (chip("h100"), "cluster", US)
    assert t.axes == (switched("D", 2, "infiniband", 50e9), switched("X", 2, "nvlink", 450e9),
                      switched("Y", 4, "nvlink", 450e9))


@pytest.mark.parametrize("mesh", [{}, [("X", 8)]])
def test_a_mesh_must_be_a_non_empty_dict(mesh):
    with pytest.raises(Error, match="^mesh must be a non-empty dict of axis name -> size"):
        topology.for_mesh("h100", mesh)


def test_a_gpu_mesh_with_a_bad_size_or_name_is_refused():
    with pytest.raises(Error, match=r"^bad size 0 in mesh \(0,\); sizes are positive integers$"):
        topology.for_mesh("h100", {"X": 0})
    with pytest.raises(Error, match="identifiers"):
        topology.for_mesh("h100", {"a b": 8})


# --- chip counts -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, n, kind, shape", [
    ("tpu-v5e", 1, "torus", "1x1"),
    ("tpu-v5e", 16, "torus", "4x4"),            # never a 1x16 line: v5e offers no such slice
    ("tpu-v5e", 64, "torus", "8x8"),            # the only published 64-chip v5e slice
    ("tpu-v5e", 128, "torus", "8x16"),          # one side of 16 wraps; 128 has no 16x16
    ("tpu-v5e", 256, "torus", "16x16"),         # the whole pod
    ("tpu-v5e", 512, "multislice", "16x16x2"),  # two pods over DCN
    ("tpu-v5e", 12, "multislice", "2x2x3"),     # no 12-chip slice: three 2x2 over DCN
    ("tpu-v5e", 24, "multislice", "2x4x3"),     # three 2x4 hosts
    ("tpu-v5e", 17, "multislice", "1x1x17"),    # prime and longer than the pod's side of 16
    ("tpu-v5p", 16, "torus", "2x2x4"),          # the 16-chip shape of the docs, not a 1x16 line
    ("tpu-v5p", 32, "torus", "2x4x4"),          # the only published 32-chip shape
    ("tpu-v5p", 64, "torus", "4x4x4"),          # a full cube wraps on every side
    ("tpu-v5p", 128, "torus", "4x4x8"),
    ("tpu-v5p", 96, "multislice", "2x4x4x3"),   # 96 chips are no slice (4x4x6 is not whole cubes)
    ("tpu-v5p", 192, "torus", "4x4x12"),        # three full cubes wrap; 4x6x8 is squarer but does not
    ("tpu-v5p", 16384, "multislice", "16x16x16x4"),  # 8192 fits no box within 16x20x28
    ("h100", 1, "nvlink", "1"),
    ("h100", 4, "nvlink", "4"),
    ("h100", 8, "nvlink", "8"),                 # one whole node is still one NVLink domain
    ("h100", 24, "cluster", "8x3"),             # 3 nodes under one leaf
    ("h100", 256, "cluster", "8x32"),           # one full leaf
    ("h100", 1024, "cluster", "8x32x4"),        # the SuperPod
    ("h100", 320, "cluster", "8x20x2"),         # 40 nodes: leaves of 20, the largest divisor up to 32
    ("h100", 264, "cluster", "8x11x3"),         # 33 nodes: one more than a leaf, so leaves of 11
    ("h100", 528, "cluster", "8x22x3"),         # 66 nodes: leaves of 22 (33 is more than a leaf holds)
    ("h100", 296, "cluster", "8x1x37"),         # 37 nodes, a prime: leaves of one node
    ("gb200", 144, "cluster", "72x2"),          # two NVL72 racks
])
def test_the_usual_network_for_a_chip_count(name, n, kind, shape):
    t = topology.for_chips(name, n)
    assert (t.kind, t.shape, t.num_chips) == (kind, shape, n)


def test_for_chips_wraps_where_the_hardware_can():
    assert topology.for_chips("tpu-v5e", 128).wraparound == {"X": False, "Y": True}
    assert all(topology.for_chips("tpu-v5p", 128).wraparound.values())


def test_gpus_that_do_not_fill_whole_nodes_are_refused():
    with pytest.raises(Error) as e:
        topology.for_chips("h100", 12)
    assert str(e.value) == "12 h100 GPUs do not fill whole 8-GPU NVLink domains; use a multiple of 8"


@pytest.mark.parametrize("chips", [0, True, 8.0])
def test_a_chip_count_must_be_a_positive_integer(chips):
    with pytest.raises(Error, match=f"^chips must be a positive integer, got {chips!r}$"):
        topology.for_chips("h100", chips)


# --- hops --------------------------------------------------------------------------------------

def test_hops_between_two_inner_chips_of_a_line():
    # 4x4 without wraparound: |3 - 1| + |3 - 1| = 4
    assert topology.hops(topology.slice("tpu-v5e", "4x4"), (3, 3), (1, 1)) == 4


def test_on_switched_axes_each_differing_coordinate_is_one_hop():
    t = topology.gpu_cluster("h100", nodes=64)
    assert topology.hops(t, (0, 0, 0), (1, 1, 1)) == 3
    assert topology.hops(t, (0, 0, 0), (7, 31, 0)) == 2
    assert topology.hops(t, (3, 5, 1), (3, 5, 1)) == 0


def test_coordinates_by_axis_name_default_to_zero():
    t = topology.slice("tpu-v5e", "4x4")
    assert topology.hops(t, {"X": 3}, (0, 0)) == 3


@pytest.mark.parametrize("src, message", [
    ({"Q": 1}, "src names unknown axes ['Q']; valid: X, Y"),
    (5, "src must be a tuple of coordinates, one per axis (X, Y), got 5"),
    ((0,), "src (0,) needs 2 coordinates, one per axis (X, Y)"),
    ((1.0, 0), "coordinate 1.0 on axis X of src must be an integer in 0..3"),
    ((True, 0), "coordinate True on axis X of src must be an integer in 0..3"),
])
def test_bad_source_coordinates_say_what_is_wrong(src, message):
    with pytest.raises(Error) as e:
        topology.hops(topology.slice("tpu-v5e", "4x4"), src, (0, 0))
    assert str(e.value) == message


def test_bad_destination_coordinates_are_named_dst():
    with pytest.raises(Error) as e:
        topology.hops(topology.slice("tpu-v5e", "4x4"), (0, 0), (0, 4))
    assert str(e.value) == "coordinate 4 on axis Y of dst must be an integer in 0..3"


@pytest.mark.parametrize("fn", [lambda x: topology.hops(x, (0,), (0,)), topology.bisection_bytes_per_s])
def test_a_non_topology_is_refused_naming_its_type(fn):
    with pytest.raises(Error) as e:
        fn("8x16")
    assert str(e.value) == "topology must be a scalebook.topology.Topology, got str"


# --- bisection ---------------------------------------------------------------------------------

def test_bisection_of_a_4x4_without_wraparound_cuts_four_links():
    # cut across X: one link in each of the 4 rows, 45 GB/s each way
    assert topology.bisection_bytes_per_s(topology.slice("tpu-v5e", "4x4")) == 4 * 45e9


def test_bisection_of_a_2x2_cuts_two_links():
    assert topology.bisection_bytes_per_s(topology.slice("tpu-v5e", "2x2")) == 2 * 45e9


def test_a_single_chip_has_no_bisection():
    with pytest.raises(Error) as e:
        topology.bisection_bytes_per_s(topology.slice("tpu-v5e", "1x1"))
    assert str(e.value) == "a single chip has no bisection; use a slice of two or more chips"


def test_a_multislice_bisection_is_refused_naming_its_links():
    with pytest.raises(Error) as e:
        topology.bisection_bytes_per_s(topology.multislice("tpu-v5e", "4x4", slices=2))
    assert str(e.value) == ("bisection_bytes_per_s is for one TPU slice (ICI torus); this multislice has "
                            "dcn, ici axes")


# --- repr and notebook table -------------------------------------------------------------------

def test_axis_repr_shows_size_link_wraparound_and_w():
    t = topology.slice("tpu-v5e", "8x16")
    assert [repr(a) for a in t.axes] == ["Axis(X=8, ici, 45 GB/s)", "Axis(Y=16, ici, wraparound, 90 GB/s)"]


def test_topology_repr_counts_chips_and_hosts():
    # 128 chips / 8 per host = 16 hosts
    assert repr(topology.slice("tpu-v5e", "8x16")) == (
        "Topology(tpu-v5e torus 8x16: 128 chips, 16 hosts; X=8 ici 45 GB/s; Y=16 ici wrap 90 GB/s)")
    # 512 GPUs / 8 per node = 64 hosts
    assert repr(topology.gpu_cluster("h100", nodes=64)) == (
        "Topology(h100 cluster 8x32x2: 512 chips, 64 hosts; X=8 nvlink 450 GB/s; Y=32 infiniband 50 GB/s; "
        "Z=2 infiniband 50 GB/s)")


def test_notebook_table_has_a_caption_and_one_row_per_axis():
    head = ("<tr><th>axis</th><th>size</th><th>link</th><th>wraparound</th><th>W per chip</th>"
            "<th>usable share</th><th>latency per step</th></tr>")
    rows = ("<tr><td>X</td><td>8</td><td>ici</td><td>no</td><td>45 GB/s</td><td>100%</td><td>1 µs</td></tr>"
            "<tr><td>Y</td><td>16</td><td>ici</td><td>yes</td><td>90 GB/s</td><td>100%</td><td>1 µs</td></tr>")
    assert topology.slice("tpu-v5e", "8x16")._repr_html_() == (
        f"<table><caption>TPU v5e torus 8x16: 128 chips, 16 hosts</caption>{head}{rows}</table>")
