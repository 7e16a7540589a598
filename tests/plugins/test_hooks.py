"""Each hook, driven through the code that calls it, with a plugin registered for one test."""

from __future__ import annotations

import pytest

from rundiff_core import redact as redact_mod
from rundiff_core.detect import detect_project
from rundiff_core.hookspecs import hookimpl
from rundiff_core.registry import AdapterSpec, ProjectClaim
from rundiff_core.resolve import default_addresses
from rundiff_core.testing import registered_plugin


@pytest.fixture
def fresh_secret_patterns():
    redact_mod._plugin_patterns.cache_clear()  # patterns are read once per process
    yield
    redact_mod._plugin_patterns.cache_clear()


def test_rundiff_secret_patterns_extends_redaction(isolated_plugins, fresh_secret_patterns):
    class Vault:
        @hookimpl
        def rundiff_secret_patterns(self):
            return [r"vault[_-]?pin"]

    config = {"vault_pin": "1234", "db": {"VAULT-PIN": "9"}, "pinned": "yes"}
    assert redact_mod.redact(config) == config  # not a secret before the plugin
    redact_mod._plugin_patterns.cache_clear()
    with registered_plugin(Vault(), "vault", isolated_plugins):
        redacted = redact_mod.redact(config)
    assert redacted == {"vault_pin": redact_mod.REDACTED, "db": {"VAULT-PIN": redact_mod.REDACTED},
                        "pinned": "yes"}


def test_rundiff_secret_patterns_failure_never_breaks_redaction(isolated_plugins,
                                                                 fresh_secret_patterns):
    class Broken:
        @hookimpl
        def rundiff_secret_patterns(self):
            raise RuntimeError("no patterns today")

    with registered_plugin(Broken(), "broken-secrets", isolated_plugins):
        assert redact_mod.redact({"api_key": "k", "lr": 1}) == {"api_key": redact_mod.REDACTED, "lr": 1}
    assert any("'broken-secrets' failed in rundiff_secret_patterns" in e for e in isolated_plugins.errors)


class _Tracker:
    """A tracker that says a project logs to it when a `.tracker` file exists."""

    @hookimpl
    def rundiff_register_adapters(self, register):
        register(AdapterSpec("tracker", ("tracker",), "x:Y", priority=5))

    @hookimpl
    def rundiff_detect_project(self, cwd, environ):
        import os

        if os.path.exists(os.path.join(cwd, ".tracker")) or environ.get("TRACKER_PROJECT"):
            return ProjectClaim("tracker", "found .tracker", address="tracker:proj")
        return None


def test_rundiff_detect_project_ranks_by_priority(isolated_plugins, tmp_path, monkeypatch):
    from rundiff_core.demo import make_arm

    make_arm(str(tmp_path / "runs"), "exp", lr=0.1, floor=0.5, seeds=1, steps=5)
    with registered_plugin(_Tracker(), "tracker", isolated_plugins):
        claims = detect_project(str(tmp_path), {}, isolated_plugins)
        assert [s.name for _c, s in claims] == ["journal"]
        claims = detect_project(str(tmp_path), {"TRACKER_PROJECT": "x"}, isolated_plugins)
        assert [s.name for _c, s in claims] == ["tracker", "journal"]  # priority 5 before 50
        assert claims[0][0].address == "tracker:proj"
        (tmp_path / ".tracker").write_text("")
        assert detect_project(str(tmp_path), {}, isolated_plugins)[0][1].name == "tracker"
        monkeypatch.chdir(tmp_path)
        assert default_addresses(isolated_plugins) == ["tracker:proj"]  # what `rundiff ls` opens


def test_rundiff_register_adapters_and_sniff_path_are_called_with_keywords(isolated_plugins, tmp_path):
    seen = []

    class Strict:
        @hookimpl
        def rundiff_register_adapters(self, register):
            seen.append("register")
            register(AdapterSpec("strict", ("strict",), "x:Y", priority=99))

        @hookimpl
        def rundiff_sniff_path(self, path):
            seen.append(path)
            return None

    from rundiff_core.detect import collect_claims

    with registered_plugin(Strict(), "strict", isolated_plugins):
        collect_claims(str(tmp_path), isolated_plugins)
    assert seen == ["register", str(tmp_path)]
