"""local: a Ray Tune trial whose whole `config` or `last_result` Ray wrote as one pickle (a
`CLOUDPICKLE_FALLBACK` wrapper, itself a JSON object) is a pickled value with a note, never a
mapping to flatten (it was a traceback)."""

from __future__ import annotations

import json
import pickle

import numpy as np

from rundiff_core.resolve import open_source


def test_a_wholly_pickled_config_and_last_result_are_notes_not_tracebacks(tmp_path):
    blob = {"_type": "CLOUDPICKLE_FALLBACK", "value": pickle.dumps(np.float64(0.25), protocol=5).hex()}
    trial = {"trial_id": "abcde_00000", "trainable_name": "PPO", "status": "TERMINATED",
             "config": blob, "last_result": blob}
    state = tmp_path / "experiment_state-2023-01-01_00-00-00.json"
    state.write_text(json.dumps({"trial_data": [[json.dumps(trial), json.dumps({"last_result": blob})]],
                                 "runner_data": {}}))
    src = open_source(f"local:{state}")
    (ref,) = src.list_runs()
    run = src.load_run(ref)
    assert run.address.endswith("#PPO_abcde_00000") and run.status == "finished"
    assert run.config == {} and run.summary == {}
    notes = "\n".join(run.fidelity)
    assert "the trial's `config` is pickled in the state file; not unpickled" in notes
    assert "the trial's `last_result` is pickled in the state file; not unpickled" in notes
