"""Refit the default serving efficiencies on the published results marked `fit` (chapter 8).

Writes scalebook/data/serving_efficiency.json, one set of constants per chip family:

- TPU: the two PaLM-on-TPU-v4 anchors of Pope et al. (2022), a small-batch decode (HBM-bound: pins
  the bandwidth efficiency) and a large batched prefill (compute-bound: pins the compute
  efficiency), reproduced exactly by bisection (`inference.refit_default_efficiency`); no per-layer
  overhead (two anchors pin two constants; XLA compiles a whole step into one program).
- GPU: the TensorRT-LLM 0.9.0 results marked `fit` (for each of A100, H100, H200 and each of Llama 2
  7B, Llama 2 70B, Mixtral 8x7B, the static batch of 2,048 input and 128 output tokens and the
  first-token latency of a 2,048-token prompt; for Mistral 7B the first-token latencies of 128- and
  2,048-token prompts), bandwidth and compute efficiency and a fixed time per layer of every
  forward pass together, by least squares on the log errors (`serving_results.fit_constants`).
  One set for every GPU generation: fitting Ampere and Hopper apart (one overhead, two pairs of
  efficiencies) drives the A100's HBM efficiency to the 100% edge of the grid, which no chip
  reaches, so the fit rows do not support a split.

Never more than a third of the results are `fit`; the rest are only predicted
(`serving_results.validation_report`). Run after changing the inference model; the tests
`test_inference.py::test_default_efficiency_reproduces_its_anchor_results` and
`test_serving_results.py::test_default_gpu_efficiency_is_the_fit_on_the_fit_results` fail until you do.
"""
import json
import pathlib

from scalebook import inference, serving_results

PATH = pathlib.Path(__file__).resolve().parents[1] / "scalebook" / "data" / "serving_efficiency.json"

TPU = {"decode_anchor": "palm-540b-tpuv4-decode-low-latency",
       "prefill_anchor": "palm-540b-tpuv4-prefill-high-throughput",
       "why": "PaLM 540B on 64 TPU v4 chips (Pope et al. 2022): int8 decode at batch 64 in 29 ms per token "
              "(HBM-bound: the weights stream once a step), prefill of 512 prompts of 2,048 tokens in 85.2 s "
              "(compute-bound)"}

if __name__ == "__main__":
    gpu_fit = [r.id for r in serving_results.results_with_role("fit", "gpu")]
    note = ("Fitted by tools/fit_serving_efficiency.py on the published results marked 'fit' in "
            "scalebook/data/serving_results.json (named here); every other result is validation only.")
    old = json.loads(PATH.read_text())
    # the TPU bisection starts from the file's current values; write a neutral start first
    PATH.write_text(json.dumps({**old, "tpu": {**TPU, "bandwidth_efficiency": 0.8, "compute_efficiency": 0.6}},
                               indent=2) + "\n")
    inference.default_efficiency.__globals__["load"].cache_clear()
    bw, ce = inference.refit_default_efficiency("tpu")
    k = serving_results.fit_constants("gpu")
    data = {"note": note,
            "tpu": {**TPU, "bandwidth_efficiency": round(bw, 4), "compute_efficiency": round(ce, 4),
                    "layer_overhead_seconds": 0.0},
            "gpu": {"fit_results": gpu_fit,
                    "why": "one set for every GPU: least squares on ln(predicted / reported) over the fit results",
                    "bandwidth_efficiency": k.bandwidth_efficiency, "compute_efficiency": k.compute_efficiency,
                    "layer_overhead_seconds": k.layer_overhead_seconds}}
    PATH.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(data, indent=2))
