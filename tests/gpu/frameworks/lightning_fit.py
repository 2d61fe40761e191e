# SPDX-License-Identifier: MIT
"""PyTorch Lightning: a Trainer fits a small module on one GPU for two epochs
(with validation), the way a Lightning user runs one.  Nothing is left behind:
under gpuleak no definite or possible leak, no API error, and the cached total
equals torch.cuda.memory_reserved() read at exit."""
import atexit
import warnings

import torch
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning as L
except ImportError:  # the older package name
    import pytorch_lightning as L

warnings.filterwarnings("ignore")


def report():
    torch.cuda.synchronize()
    print(f"lightning_fit: reserved {torch.cuda.memory_reserved()} "
          f"allocated {torch.cuda.memory_allocated()}", flush=True)


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(),
                                       torch.nn.Linear(256, 4))

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, _):
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


torch.manual_seed(0)
data = TensorDataset(torch.randn(512, 32), torch.randint(0, 4, (512,)))
trainer = L.Trainer(accelerator="gpu", devices=1, max_epochs=2, logger=False,
                    enable_checkpointing=False, enable_progress_bar=False,
                    enable_model_summary=False)
trainer.fit(Classifier(), DataLoader(data, batch_size=64), DataLoader(data, batch_size=128))
assert trainer.state.finished, trainer.state
del trainer
torch.cuda.synchronize()
atexit.register(report)
print("lightning_fit: done", flush=True)
