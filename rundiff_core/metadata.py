"""Tracker metadata, kept apart from config: where, when and with what a run ran — start time,
host, user, git, program and command line, Python, OS, CPU, GPU, memory — as opposed to the
parameters the user set. Metadata is shown by `ls` (a run's `meta`), never compared in a config
diff, used in an arm key or printed in a label: two seeds started a minute apart on two hosts are
one arm, and `startedAt=2020-03-28T19:19:26…` tells no reader which run is which."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: Key names (compared without case, `_`, `-`, `.` or spaces) that tracker metadata files use:
#: W&B's wandb-metadata.json, Sacred's run.json host block, MLflow's `mlflow.*` tags, trackio's
#: `_Created`, timm/YOLO's `start_time`, and the stamps scripts add to their own dumps (Allie's
#: model JSON: `created date`, `session id`, `device info` with its `operating system`).
METADATA_NAMES = frozenset("""
    startedat starttime start started startdate starttimestamp endtime endedat stoptime finishedat
    heartbeatat heartbeat created createdat createdon createddate creationdate createdtime
    updatedat datetime date time timestamp timezone boottime sessionid
    walltime runtime duration elapsed
    host hostname hostip node nodename machine cluster slurmjobid jobid pid user username email
    git gitremote gitcommit gitbranch gitdirty commit commithash sha remote repo repository
    branch dirty program codepath codepathlocal executable command cmd commandline argv args
    root cwd workdir logdir outputdir savedir path
    python pythonversion pythonexecutable os osname osrelease osversion operatingsystem platform
    system systeminfo sysinfo kernel docker container deviceinfo machineinfo hardware hardwareinfo
    cpu cpudata cpucount cpucountlogical cpufreq cpufreqpercore cpuinfo memory ram disk
    gpu gpus gpucount gpudevices gpunvidia gputype gpuname gpuapple cuda cudaversion cudnn
    cudnnversion driver driverversion torchversion tensorflowversion version writerid state
""".split())
_NORM = re.compile(r"[\s_\-.]")


def _norm(key: str) -> str:
    return _NORM.sub("", str(key).lower())


def is_metadata_key(key: str) -> bool:
    """A key that names tracker metadata (its first path segment: `git/remote` and `git.remote`
    are git's)."""
    first = re.split(r"[/\\.]", str(key), maxsplit=1)[0]
    norm = _norm(first)
    return norm in METADATA_NAMES or norm.startswith(("mlflow", "wandb", "_created", "_username"))


def split_metadata(mapping: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(config, metadata) of a mapping a run's files hold: each key whose name is tracker
    metadata (METADATA_NAMES) goes to metadata, every other key stays config."""
    config: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    for k, v in mapping.items():
        (meta if is_metadata_key(k) else config)[k] = v
    return config, meta


__all__ = ["METADATA_NAMES", "is_metadata_key", "split_metadata"]
