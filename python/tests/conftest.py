# SPDX-License-Identifier: Apache-2.0
import pytest


@pytest.fixture
def torch_cuda():
    """PyTorch with a GPU, or the test is skipped (CPU machines, CI)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    return torch


@pytest.fixture
def manager(torch_cuda):
    import encore
    return encore.Manager(flags="")
