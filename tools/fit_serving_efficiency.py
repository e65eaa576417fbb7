"""Refit the default serving efficiencies on their anchor results (chapter 8).

Writes scalebook/data/serving_efficiency.json. The anchors are the published results whose
time is set by one thing each: a small-batch decode step (HBM bandwidth) and a large batched
prefill (matmul throughput). Run after changing the inference model; the test
`test_inference.py::test_default_efficiency_reproduces_its_anchor_results` fails until you do.
"""
import json
import pathlib

from scalebook import inference

PATH = pathlib.Path(__file__).resolve().parents[1] / "scalebook" / "data" / "serving_efficiency.json"

TPU = {"decode_anchor": "palm-540b-tpuv4-decode-low-latency",
       "prefill_anchor": "palm-540b-tpuv4-prefill-high-throughput",
       "why": "PaLM 540B on 64 TPU v4 chips (Pope et al. 2022): int8 decode at batch 64 in 29 ms per token "
              "(HBM-bound: the weights stream once a step), prefill of 512 prompts of 2,048 tokens in 85.2 s "
              "(compute-bound)"}

if __name__ == "__main__":
    note = ("Fitted by tools/fit_serving_efficiency.py on the anchors named here. No GPU serving result "
            "in scalebook/data/serving_results.json states its settings fully enough to fit on, so the "
            "GPU family carries the TPU fit over (chapter 8 says so and shows how the answers move with it).")
    data = {"note": note, "tpu": dict(TPU), "gpu": {"carried_over_from": "tpu"}}
    PATH.write_text(json.dumps({**data, "tpu": {**TPU, "bandwidth_efficiency": 0.8, "compute_efficiency": 0.6}},
                               indent=2) + "\n")
    inference.default_efficiency.__globals__["load"].cache_clear()
    bw, ce = inference.refit_default_efficiency("tpu")
    data["tpu"].update(bandwidth_efficiency=round(bw, 4), compute_efficiency=round(ce, 4))
    data["gpu"].update(bandwidth_efficiency=round(bw, 4), compute_efficiency=round(ce, 4))
    PATH.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(data, indent=2))
