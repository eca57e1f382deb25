# SPDX-License-Identifier: Apache-2.0
"""The decoder the AOTInductor tests and benchmark run: 2 GPT-2-sized blocks
(768 wide, 12 heads, 4x MLP with tanh GELU, pre-LayerNorm, causal attention
written out so that no kernel draws random numbers), a final LayerNorm, bf16,
random weights from a fixed seed (no download). A module, not a benchmark:
tools/gpu_suite.sh runs only bench/*_bench.py.

Input x: (BATCH, SEQ, EMBD) bfloat16; output: the same shape."""

import math

BATCH, SEQ, EMBD, HEADS, LAYERS = 4, 32, 768, 12, 2
SEED = 1234


def build(torch, device="cuda"):
    nn = torch.nn
    F = torch.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(EMBD, 3 * EMBD)
            self.c_proj = nn.Linear(EMBD, EMBD)
            self.register_buffer("mask", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(x).split(EMBD, dim=2)
            q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // HEADS))
            att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
            return self.c_proj((att @ v).transpose(1, 2).reshape(b, t, c))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(EMBD), Attention()
            self.ln_2 = nn.LayerNorm(EMBD)
            self.c_fc, self.c_proj = nn.Linear(EMBD, 4 * EMBD), nn.Linear(4 * EMBD, EMBD)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
            self.ln_f = nn.LayerNorm(EMBD)

        def forward(self, x):
            for blk in self.blocks:
                x = blk(x)
            return self.ln_f(x)

    torch.manual_seed(SEED)
    return Decoder().to(device=device, dtype=torch.bfloat16).eval()


def example_input(torch, seed=0, device="cuda"):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(BATCH, SEQ, EMBD, generator=g).to(device=device, dtype=torch.bfloat16)
