"""Refit the default matmul efficiency of each chip family on its fit runs (chapter 6).

Writes scalebook/data/training_efficiency.json: per family the efficiency (the `eff_kernel` of
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

if __name__ == "__main__":
    old = json.loads(PATH.read_text())
    data = {}
    for fam in ("tpu", "gpu"):
        data[fam] = {"metric": "tokens_per_s_per_chip", "method": METHOD,
                     "fitted_on": [r.id for r in training.fit_runs(fam)],
                     "efficiency": round(training.refit_default_efficiency(fam), 4)}
    data["tp_overlap"] = old["tp_overlap"]
    PATH.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps({k: (v["efficiency"] if "efficiency" in v else v) for k, v in data.items()}, indent=2))
