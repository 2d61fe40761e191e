"""The classic logging leak: a training loop that keeps `loss`, the tensor,
instead of `loss.item()`, the number.  Every step adds one tensor that stays
on the GPU for the rest of the run.

    gpuleak --growth-checkpoints=5 python train.py

See README.md.  Runs without gpuleak too (its checkpoints are then no-ops)."""
import torch

try:
    import gpuleak  # on PYTHONPATH under the gpuleak launcher
except ImportError:  # not under gpuleak: checkpoints do nothing
    class gpuleak:
        checkpoint = staticmethod(lambda name: False)


torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 32, device="cuda")
y = torch.randn(256, 1, device="cuda")

losses = []
for step in range(50):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)  # LEAK: this tensor is kept
    loss.backward()
    opt.step()
    losses.append(loss)  # the bug; the fix: losses.append(loss.item())
    gpuleak.checkpoint("step")  # each allocation site is compared with the last one

print(f"step {step}: loss {losses[-1]:.4f}, {len(losses)} losses kept")
