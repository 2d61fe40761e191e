# SPDX-License-Identifier: MIT
"""PyTorch tests checked by gpuleak's pytest plugin (tests/gpu/run_suite.py runs
them with PyTorch's caching allocator on and off): the two that keep a tensor
alive past their end must fail, the others must pass."""
import torch

kept = []


def test_matmul_clean():
    # First: cuBLAS makes its handle and workspace here.
    x = torch.randn(512, 512, device="cuda")
    y = x @ x
    assert y.shape == (512, 512)


def test_keeps_big_tensor():
    kept.append(torch.randn(1024, 1024, device="cuda"))  # 4 MiB: a segment of its own


def test_frees_everything():
    for _ in range(10):
        z = torch.zeros(1 << 20, device="cuda")
        del z


def test_keeps_small_tensor():
    kept.append(torch.ones(16, device="cuda"))  # 64 bytes, inside a 2 MiB cache segment


def test_training_step_clean():
    model = torch.nn.Linear(256, 256).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.randn(64, 256, device="cuda")).sum()
    loss.backward()
    opt.step()
    assert float(loss) == float(loss)
