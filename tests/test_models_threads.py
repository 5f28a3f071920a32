import torch

from posgeom.models import torch_threads


def test_torch_threads_sets_and_restores():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_torch_threads_leaves_gpus_and_none_alone():
    before = torch.get_num_threads()
    for n, device in ((1, "cuda"), (None, "cpu")):
        with torch_threads(n, device=device):
            assert torch.get_num_threads() == before
