# SPDX-License-Identifier: Apache-2.0
"""encore's Python quick start: a module's forward as a method, called with
inputs at new addresses every call, bound to them with no copies.

  python3 examples/python/quickstart.py
"""

import torch

import encore

model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.GELU()).cuda().eval()


@encore.method(constants=model)  # parameters: read-only constants
def step(x):
    return model(x)


with torch.no_grad():
    for i in range(10):
        x = torch.randn(8, 512, device="cuda")
        y = step(x)  # warmups, the capture, then replays
        torch.testing.assert_close(y, model(x), rtol=0, atol=0)
r = step.report()
print(f"phase={r['phase']} binding={r['binding']} warmups={r['warmup_calls']} captures={r['captures']} "
      f"replays={r['replays']}")
