"""The W&B adapter's hooks: `.wandb` logs, run folders and `wandb/` folders; W&B servers online.

Local files are read by rundiff's own transaction-log reader (no wandb package needed); only
`wandb:ENTITY/PROJECT[/RUN_ID]` needs the `[wandb]` extra. See docs/adapters/wandb.md.
"""

from __future__ import annotations

import os

from rundiff_core import AdapterSpec, adapters_hook, hookimpl

# Every start imports this module to register the adapter: what only a hook needs (the folder
# rules of `layout`, the walk, the claim classes) is imported inside that hook.
NAME = "wandb"
_URL = (r"^https?://(?:www\.)?wandb\.ai/(?P<entity>[^/?#]+)/(?P<project>[^/?#]+)"
        r"(?:/runs/(?P<run>[^/?#]+))?/?(?:[?#].*)?$")  # compiled (and cached by re) on first use


rundiff_register_adapters = adapters_hook(AdapterSpec(
    name=NAME, schemes=("wandb",), priority=10,
    source="rundiff_adapters.wandb.source:WandbSource",
    install_hint="pip install 'rundiff[wandb]'",
    summary="W&B: .wandb logs, run folders and wandb/ folders (no extra needed); "
    "ENTITY/PROJECT[/RUN_ID] online with rundiff[wandb]",
))


@hookimpl
def rundiff_sniff_path(path):
    from rundiff_core import SNIFF_ENTRIES, Claim

    from .layout import is_log_file, is_run_dir, run_dirs, wandb_root

    if os.path.isfile(path):
        if is_log_file(path):
            return Claim(NAME, "W&B transaction log (':W&B' header)")
        return None
    if is_run_dir(path):
        return Claim(NAME, f"W&B run folder {os.path.basename(os.path.normpath(path))}")
    root = wandb_root(path, SNIFF_ENTRIES)
    if root is not None:
        return Claim(NAME, f"folder of {len(run_dirs(root, SNIFF_ENTRIES))} W&B run folder(s)",
                     locator=root)
    return None


@hookimpl
def rundiff_parse_address(raw):
    import re

    m = re.match(_URL, raw)
    if not m:
        return None
    from rundiff_core import Address

    locator = "/".join(p for p in (m["entity"], m["project"], m["run"]) if p)
    return Address(f"wandb:{locator}", "wandb", locator)


@hookimpl
def rundiff_detect_project(cwd, environ):
    from rundiff_core import SNIFF_ENTRIES, ProjectClaim

    from .layout import run_dirs, wandb_root

    base = environ.get("WANDB_DIR") or cwd
    folder = os.path.join(base, "wandb")
    root = wandb_root(folder, SNIFF_ENTRIES) if os.path.isdir(folder) else None
    if root is not None:
        n = len(run_dirs(root, SNIFF_ENTRIES))
        return ProjectClaim(NAME, f"{os.path.relpath(root, cwd)}/ holds {n} W&B "
                            "run folder(s)", address=f"wandb:{root}")
    entity, project = environ.get("WANDB_ENTITY"), environ.get("WANDB_PROJECT")
    if entity and project:
        return ProjectClaim(NAME, "WANDB_ENTITY and WANDB_PROJECT are set",
                            address=f"wandb:{entity}/{project}")
    if environ.get("WANDB_API_KEY") or project:
        return ProjectClaim(NAME, "W&B credentials are set, but no WANDB_ENTITY/WANDB_PROJECT: give "
                            "wandb:ENTITY/PROJECT")
    return None
