"""Refit the default matmul efficiency of each chip family on its fit runs (chapter 6).

Writes scalebook/data/training_efficiency.json: per family the efficiency, the anchor run used
while no published run carries a `role`, and the ids of the runs the value was fitted on
(`training.fit_runs`). The TP-overlap compute slowdown, a cited constant, is kept as it is.
Run after changing the step model; the test
`test_training.py::test_default_efficiency_reproduces_its_anchor_run` fails until you do.
"""
import json
import pathlib

from scalebook import training

PATH = pathlib.Path(__file__).resolve().parents[1] / "scalebook" / "data" / "training_efficiency.json"

ANCHORS = {
    "tpu": {"run": "palm-540b-tpuv4", "metric": "tokens_per_s_per_chip",
            "why": "PaLM 540B on 6,144 TPU v4 chips, 238.3k tokens/s (46.2% MFU; Chowdhery et al. 2022)"},
    "gpu": {"run": "megatron-1t-a100", "metric": "tokens_per_s_per_chip",
            "why": "Megatron-LM 1T on 3,072 A100s, 163 TFLOP/s per GPU by Megatron's FLOP formula, which "
                   "includes recomputation, converted to tokens/s (Narayanan et al. 2021)"},
}

if __name__ == "__main__":
    old = json.loads(PATH.read_text())
    data = {fam: {**a, "efficiency": old.get(fam, {}).get("efficiency", 0.5)} for fam, a in ANCHORS.items()}
    data["tp_overlap"] = old["tp_overlap"]
    PATH.write_text(json.dumps(data, indent=2) + "\n")  # anchors first: refit reads them
    training.default_efficiency.__globals__["load"].cache_clear()
    for fam in ANCHORS:
        data[fam]["fitted_on"] = [r.id for r in training.fit_runs(fam)]
        data[fam]["efficiency"] = round(training.refit_default_efficiency(fam), 4)
    PATH.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(data, indent=2))
