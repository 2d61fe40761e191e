# SPDX-License-Identifier: MIT
"""--check-signal on a GPU: a PyTorch program (its cache off: a tensor is a
block) sends itself SIGUSR2, as a user would from outside, and waits for the
check in its log (argv[1]); keeps 16 MiB more, and again.  The second check
(added) shows the new block with its change."""
import os
import signal
import sys
import time

import torch

log = sys.argv[1]


def wait_for(text):
    for _ in range(3000):
        try:
            with open(log) as f:
                if text in f.read():
                    return
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    print(f"check_signal: FAIL: no {text!r} in {log}", flush=True)


kept = [torch.empty(1 << 20, device="cuda")]
torch.cuda.synchronize()
os.kill(os.getpid(), signal.SIGUSR2)
wait_for("Leak check 1 ")
kept.append(torch.empty(1 << 22, device="cuda"))
torch.cuda.synchronize()
os.kill(os.getpid(), signal.SIGUSR2)
wait_for("Leak check 2 ")
print("check_signal: done", flush=True)
