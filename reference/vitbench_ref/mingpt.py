"""taming-transformers' minGPT (taming/modules/transformer/mingpt.py; docs/reference-notes.md, minGPT),
written from the spec with the original's state_dict names: token embedding plus learned positions
(zero-initialised in the original), pre-norm blocks with separate key, query and value Linears and a
causal mask, exact GELU, ln_f and a head without bias.  Op kind ``mingpt``: one forward over code
indices ``idx [B, T]`` (float32, integers below vocab_size) giving ``logits [B, T, vocab_size]``."""

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

OPS = ("mingpt",)


class CausalSelfAttention(nn.Module):
    def __init__(self, e, heads, block):
        super().__init__()
        self.key = nn.Linear(e, e)
        self.query = nn.Linear(e, e)
        self.value = nn.Linear(e, e)
        self.proj = nn.Linear(e, e)
        self.heads = heads
        # The original registers this (1, 1, block, block) buffer in the state_dict; it is not a parameter
        # and its value is fixed, so here it is not persistent (not a fixture array).
        self.register_buffer("mask", torch.tril(torch.ones(block, block)).view(1, 1, block, block), persistent=False)

    def forward(self, x):
        b, t, e = x.shape
        h, d = self.heads, e // self.heads
        k = self.key(x).view(b, t, h, d).transpose(1, 2)
        q = self.query(x).view(b, t, h, d).transpose(1, 2)
        v = self.value(x).view(b, t, h, d).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, e))


class Block(nn.Module):
    def __init__(self, e, heads, block):
        super().__init__()
        self.ln1 = nn.LayerNorm(e)
        self.ln2 = nn.LayerNorm(e)
        self.attn = CausalSelfAttention(e, heads, block)
        self.mlp = nn.Sequential(nn.Linear(e, 4 * e), nn.GELU(), nn.Linear(4 * e, e))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """forward(idx [B, T] float32 code indices) -> {"logits": [B, T, vocab_size]}."""

    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Parameter(torch.zeros(1, block_size, n_embd))
        self.blocks = nn.Sequential(*[Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.block_size = block_size

    def forward(self, idx):
        t = idx.shape[1]
        assert t <= self.block_size, "sequence longer than block_size"
        x = self.tok_emb(idx.long()) + self.pos_emb[:, :t, :]
        return {"logits": self.head(self.ln_f(self.blocks(x)))}


def build(op, p):
    return GPT(p["vocab_size"], p["block_size"], p["n_layer"], p["n_head"], p["n_embd"])


def check(op, p):
    if p["n_embd"] % p["n_head"]:
        raise ValueError("mingpt: n_embd %d is not a multiple of n_head %d" % (p["n_embd"], p["n_head"]))
    if p["tokens"] > p["block_size"]:
        raise ValueError("mingpt: tokens %d exceed block_size %d" % (p["tokens"], p["block_size"]))
    if p["vocab_size"] > 2 ** 24:
        raise ValueError("mingpt: vocab_size above 2^24")


def shapes(op, p, b):
    e, v = p["n_embd"], p["vocab_size"]
    w = {"pos_emb": [1, p["block_size"], e], "tok_emb.weight": [v, e]}
    for i in range(p["n_layer"]):
        pre = "blocks.%d." % i
        for n in ("ln1", "ln2"):
            w.update({pre + n + ".weight": [e], pre + n + ".bias": [e]})
        for n in ("key", "query", "value", "proj"):
            w.update({pre + "attn." + n + ".weight": [e, e], pre + "attn." + n + ".bias": [e]})
        w.update({pre + "mlp.0.weight": [4 * e, e], pre + "mlp.0.bias": [4 * e], pre + "mlp.2.weight": [e, 4 * e],
                  pre + "mlp.2.bias": [e]})
    w.update({"ln_f.weight": [e], "ln_f.bias": [e], "head.weight": [v, e]})
    return {"idx": [b, p["tokens"]]}, w, {"logits": [b, p["tokens"], v]}


def macs(op, p, b):
    """L*(12*T*E^2 + 2*T^2*E) + T*E*V per sequence (the attention products over every pair)."""
    t, e = p["tokens"], p["n_embd"]
    return b * (p["n_layer"] * (12 * t * e * e + 2 * t * t * e) + t * e * p["vocab_size"])


def independent_reference(op, inputs, weights, p):
    """The same module in float64 (not independent code, as for clip_resnet: it bounds the float32
    rounding of the stored logits); tests/test_vqgan.py checks the causal mask and exact GELU."""
    m = build(op, p).double().eval()
    m.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in weights.items()}, strict=True)
    with torch.no_grad():
        return {"logits": m(torch.from_numpy(inputs["idx"]))["logits"].numpy()}


def code_ids(params, batch, shape):
    """``idx [B, T]``: code indices uniform over the vocabulary (every id possible)."""
    rng = np.random.default_rng(20240601 + 4)
    return rng.integers(0, params["vocab_size"], shape).astype(np.float32)
