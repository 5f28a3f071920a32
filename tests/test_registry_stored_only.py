"""stored_only(): the registry reads and never computes (how chapters show committed paper results)."""

import pytest

from posgeom.config import get_settings
from posgeom.registry import NotStoredError, Registry, stored_at_scale, stored_only


def _run(settings, *, calls, value=1.0, force=False):
    def compute():
        calls.append(settings.scale)
        return {"x": value}

    return Registry(settings.results_dir).run(
        "toy", compute, params={"v": 1}, scale=settings.scale, seed=0, device="cpu", force=force
    )


def test_stored_only_never_computes(tmp_path):
    settings = get_settings(results_dir=tmp_path)
    calls = []
    with stored_only(), pytest.raises(NotStoredError, match="toy .*not stored"):
        _run(settings, calls=calls)
    assert calls == []
    _run(settings, calls=calls)
    with stored_only():
        assert _run(settings, calls=calls, force=True).values == {"x": 1.0}
    assert calls == ["quick"]


def test_stored_at_scale_reads_the_paper_entry_or_none(tmp_path):
    quick = get_settings(results_dir=tmp_path, scale="quick")
    calls = []
    assert stored_at_scale(_run, quick, calls=calls) is None
    _run(quick.with_(scale="paper"), calls=calls, value=2.0)
    assert stored_at_scale(_run, quick, calls=calls).values == {"x": 2.0}
    assert calls == ["paper"]


def test_a_record_saved_with_no_code_is_never_stale(tmp_path):
    from posgeom.registry import code_changed

    registry = Registry(tmp_path)
    entry = registry.save("chapter_runs", {"wall_s": 3.0}, params={"chapter": "x"}, scale="paper", seed=0,
                          device="cpu", code=())
    assert entry.manifest["code_modules"] == [] and not code_changed(entry.manifest)
    assert code_changed({"code_key": "abc"}) and code_changed({"code_modules": []})
