# SPDX-License-Identifier: MIT
"""Python's os._exit skips atexit handlers: gpuleak's report must come anyway,
saying so, and the status must stay 5.  One tensor stays in PyTorch's cache."""
import os
import sys

import torch

x = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
sys.stdout.flush()
os._exit(5)
