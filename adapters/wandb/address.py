"""The online `wandb:` address grammar: `ENTITY/PROJECT[/RUN_ID][?filters]`.

Its own module so that the local source (which hands such addresses on) and the online source
(which reads them) share it without importing each other.
"""

from __future__ import annotations

import os
import re

from .layout import RUN_DIR

ONLINE = re.compile(r"^(?P<entity>[\w.-]+)/(?P<project>[^/?#\s]+)(?:/(?:runs/)?(?P<run>[\w.-]+))?/?"
                    r"(?:[?#](?P<query>.*))?$")


def is_online(locator: str) -> bool:
    """`ENTITY/PROJECT[/RUN_ID][?filters]` that is not an existing path nor looks like one."""
    if os.path.exists(os.path.expanduser(locator)) or locator.startswith((".", "/", "~", "\\")):
        return False
    path = locator.split("?", 1)[0].split("#", 1)[0]
    if path.endswith(".wandb") or any(RUN_DIR.match(part) for part in path.split("/")):
        return False
    return bool(ONLINE.match(locator))

