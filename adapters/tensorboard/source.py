"""TensorBoardSource: a log directory tree, one run directory, or one event file.

Address grammar (docs/adapters/tensorboard.md):

    tb:LOGDIR                 every directory under LOGDIR holding event files is a run
    tb:LOGDIR/RUN             one run (a directory with events.out.tfevents.* files)
    tb:PATH/events.out.tfevents.…   one event file read as a run
    tb:PATH?purge=tensorboard drop what TensorBoard's server hides after restarts
    tb:PATH?purge=accumulator drop what EventAccumulator / tbparse drop (default: keep every point)

`tensorboard:` is an alias of `tb:`. The environment variable `RUNDIFF_TB_PURGE` (same values)
sets the default for addresses without `?purge=`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from rundiff_core import (
    Address,
    AddressError,
    BaseSource,
    HistoryColumns,
    InputError,
    Run,
    RunNotFoundError,
    RunRef,
    seed_folder_siblings,
    seed_of,
)

from . import find_run_dirs, is_event_file
from .reader import RunData, event_files, read_run

PURGE_ENV = "RUNDIFF_TB_PURGE"
_PURGE_VALUES = {
    "": "keep", "0": "keep", "false": "keep", "no": "keep", "off": "keep", "keep": "keep",
    "1": "tensorboard", "true": "tensorboard", "yes": "tensorboard", "on": "tensorboard",
    "tensorboard": "tensorboard", "server": "tensorboard",
    "accumulator": "accumulator", "eventaccumulator": "accumulator", "tbparse": "accumulator",
}


def parse_purge(text: str, where: str) -> str:
    mode = _PURGE_VALUES.get(text.strip().lower())
    if mode is None:
        raise AddressError(
            f"unknown purge mode {text!r} in {where}",
            hint="use purge=keep (every point, the default), purge=tensorboard (what "
            "TensorBoard's server hides) or purge=accumulator (EventAccumulator/tbparse rules)",
        )
    return mode


def split_options(locator: str) -> tuple[str, dict[str, str]]:
    """`PATH?purge=tensorboard` → (PATH, {'purge': 'tensorboard'}); a literal '?' in a path stays."""
    path, sep, query = locator.rpartition("?")
    if not sep or os.path.exists(locator):
        return locator, {}
    opts: dict[str, str] = {}
    for part in filter(None, query.split("&")):
        key, _eq, value = part.partition("=")
        if key != "purge":
            raise AddressError(
                f"unknown option {key!r} in tb:{locator}",
                hint="the tb: scheme takes ?purge=keep|tensorboard|accumulator",
            )
        opts[key] = value
    return path, opts


class TensorBoardSource(BaseSource):
    """Runs under a log directory; each run's files are decoded once and cached until close()."""

    def __init__(self, address: Address) -> None:
        super().__init__(address)
        path, opts = split_options(address.locator or ".")
        self.purge = parse_purge(opts["purge"], f"tb:{address.locator}") if "purge" in opts \
            else parse_purge(os.environ.get(PURGE_ENV, ""), f"${PURGE_ENV}")
        self.root = os.path.abspath(os.path.expanduser(path))
        if not os.path.exists(self.root):
            raise InputError(
                f"no such TensorBoard log directory or event file: {path}",
                hint="give a log directory (holding events.out.tfevents.* files) or one event file",
            )
        if os.path.isfile(self.root) and not is_event_file(os.path.basename(self.root)):
            raise InputError(
                f"{path} is not a TensorBoard event file",
                hint="event files are named events.out.tfevents.*; or give their directory",
            )
        self._data: dict[str, RunData] = {}
        self._siblings: dict[tuple[str, ...], list[RunRef]] = {}

    # -- addresses ---------------------------------------------------------------------------
    def _address(self, path: str) -> str:
        return f"tb:{path}" + (f"?purge={self.purge}" if self.purge != "keep" else "")

    def _ref(self, path: str) -> RunRef:
        """A run is named by its path relative to the log directory (TensorBoard's run name)."""
        if os.path.isfile(self.root):
            name = os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
            return RunRef(os.path.basename(path), self._address(path), name)
        rel = os.path.relpath(path, self.root)
        run_id = os.path.basename(path) if rel == "." else rel
        return RunRef(run_id, self._address(path), run_id)

    def list_runs(self) -> list[RunRef]:
        if os.path.isfile(self.root):
            return [self._ref(self.root)]
        return [self._ref(d) for d in find_run_dirs(self.root)]

    def _path(self, ref: RunRef) -> str:
        path, _opts = split_options(ref.address.split(":", 1)[1])
        if os.path.isfile(path) and is_event_file(os.path.basename(path)):
            return path
        if not os.path.isdir(path) or not event_files(path):
            raise RunNotFoundError(
                f"no TensorBoard run at {path}",
                hint="a run is a directory directly holding events.out.tfevents.* files; "
                "`rundiff ls tb:LOGDIR` lists them",
            )
        return path

    def _read(self, ref: RunRef) -> RunData:
        path = self._path(ref)
        if path not in self._data:
            files = [path] if os.path.isfile(path) else event_files(path)
            root = os.path.dirname(path) if os.path.isfile(path) else path
            data = read_run(files, purge=self.purge, root=root)
            if not os.path.isfile(path):  # a run folder: the logs beside its events are its own
                from .companions import with_companions

                data = with_companions(data, path)
            self._data[path] = data
        return self._data[path]

    # -- the protocol ------------------------------------------------------------------------
    def load_run(self, ref: RunRef) -> Run:
        data = self._read(ref)
        path = self._path(ref)
        notes = list(data.notes)
        meta = dict(data.meta, path=path)
        config = _run_config(os.path.dirname(path) if os.path.isfile(path) else path,
                             data.config, notes, meta)
        run = Run(
            address=ref.address,
            name=ref.name or ref.run_id,
            run_id=ref.run_id,
            adapter="tensorboard",
            config=config,
            summary={},
            status="unknown",
            seed=seed_of(config, path),
            events=list(data.events),
            fidelity=notes,
            meta=meta,
        )
        return self.bind(run, ref)

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> HistoryColumns:
        return self._read(ref).history(keys)

    def seed_siblings(self, ref: RunRef) -> list[RunRef]:
        """Run directories next to a seed-named one whose names differ only in the seed
        (`seed-0`/`seed-1`, `lr0.1_s0`/`lr0.1_s1`): the arm's variance samples."""
        path = self._path(ref)
        if os.path.isfile(path):
            return [ref]
        siblings = seed_folder_siblings(path, _is_run_dir)
        if siblings == [path]:
            return [ref]
        key = tuple(siblings)
        if key not in self._siblings:  # an arm of N seeds builds its refs once, not N times
            self._siblings[key] = [RunRef(os.path.basename(d), self._address(d), os.path.basename(d))
                                   for d in siblings]
        return self._siblings[key]

    def collection(self, ref: RunRef) -> str | None:
        """The run directory's parent (a Lightning `lightning_logs/`, a `runs/` log dir)."""
        path = self._path(ref)
        run_dir = os.path.dirname(path) if os.path.isfile(path) else path
        return self._address(os.path.dirname(run_dir))

    def close(self) -> None:
        self._data.clear()


def _is_run_dir(path: str) -> bool:
    return bool(event_files(path))


def _run_config(run_dir: str, hparams: dict, notes: list[str], meta: dict) -> dict:
    """The run's config: the hparams plugin's values, with the config files beside the event
    files merged beneath them (rundiff_core.read_run_config: config.json/yaml/yml, hparams.yaml,
    params.yaml/json, args.json/yaml/txt, opt.yaml, hyp.yaml under `hyp`, variant.json) — a
    config file found beside an event file belongs to that run, and so does the `.hydra/` of the
    Hydra job folder holding it (rundiff_core.hydra_overlay). What each file gave is a note
    and `meta["config_files"]`; tracker metadata (W&B's `_wandb`, wandb-metadata.json) goes to
    meta, never config."""
    from rundiff_core import hydra_overlay, joined_config, read_run_config

    got = read_run_config(run_dir, base=hparams)
    notes += got.notes
    meta.update(got.meta)
    if got.files:
        meta["config_files"] = got.files
    if any(name in got.files for name in got.sources):
        meta["config_from"] = " + ".join(got.sources)
    config = got.config
    job = hydra_overlay(run_dir, config)  # Lightning's version_N/ inside a Hydra job folder
    if job is not None:
        config = job.config
        notes += job.notes
        meta.update(job.meta)
    return _with_joined(config, joined_config(run_dir), notes, meta)


def _with_joined(config: dict, joined: tuple[dict, list[str]], notes: list[str],
                 meta: dict) -> dict:
    """`config` with the keys it lacks from the Namespace printed beside the run folder that
    names it (rundiff_core.joined_config: a stdout copy holding each run's args): what the
    run's own files give is kept."""
    extra, said = joined
    notes += said
    added = {k: v for k, v in extra.items() if k not in config}
    if not added:
        return config
    meta["config_from"] = " + ".join(filter(None, [meta.get("config_from"), "printed Namespace"]))
    return {**config, **added}
