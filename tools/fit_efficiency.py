"""Refit the default matmul efficiency of each chip family on its fit runs (chapter 6).

Writes scalebook/data/training_efficiency.json: per family (TPUs, GPUs, and each GPU generation
with fit runs) the efficiency (the `eff_kernel` of
`scalebook.efficiency`: what a kernel achieves on whole waves of whole tiles), how it was fitted,
and the ids of the runs it was fitted on (`training.fit_runs`: every published run of the family
whose `role` is "fit"). The TP-overlap compute slowdown, a cited constant, is kept as it is.
Run after changing the step model; the test
`test_training.py::test_default_efficiency_is_the_refit_on_the_fit_runs_only` fails until you do.
"""
import json
import pathlib

from scalebook import training

PATH = pathlib.Path(__file__).resolve().parents[1] / "scalebook" / "data" / "training_efficiency.json"

METHOD = ("minimises the median over the fit runs of |log(predicted / reported)| training tokens/s per chip "
          "(training.refit_default_efficiency)")

# A GPU generation: its chips and why they share a constant (training.efficiency_family). A generation
# is fitted only where some fit run ran on it; the GPUs of the others take the "gpu" constant.
GENERATIONS = {
    "ampere": {"chips": ["a100"], "source": "nvidiaa100"},
    "hopper": {"chips": ["h100", "h200"], "source": "nvidiahopperwp; nvidiah200 (H200 is a Hopper GPU like H100, "
               "with more and faster HBM)"},
}

if __name__ == "__main__":
    old = json.loads(PATH.read_text())
    data = {}
    for fam in ("tpu", "gpu", *GENERATIONS):
        data[fam] = {**GENERATIONS.get(fam, {}), "metric": "tokens_per_s_per_chip", "method": METHOD}
        if fam == "gpu":
            data[fam]["applies_to"] = "every GPU of a generation without fit runs (training.efficiency_family)"
        data[fam]["fitted_on"] = [r.id for r in training.fit_runs(fam)]
        data[fam]["efficiency"] = round(training.refit_default_efficiency(fam), 4)
    data["tp_overlap"] = old["tp_overlap"]
    PATH.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps({k: (v["efficiency"] if "efficiency" in v else v) for k, v in data.items()}, indent=2))
