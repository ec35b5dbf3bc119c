#!/usr/bin/python3
"""Faithful torch re-implementation of a llama-arch GGUF model (the target, or a plain draft).

Feature capture: taps[l] for l < n_layer is layer_inp[l] (the residual entering block l; l = 0 is the
embedding output); l == n_layer is the final hidden AFTER output_norm (llama's h_nextn).

  target.py check -m MODEL [--augur BIN]   compare logits with `augur logits` on a few prompts
"""
import argparse, json, os, subprocess, sys, tempfile
import numpy as np
import torch
import torch.nn.functional as F
from gguf_io import read_gguf
from common import rms_norm, rope_cache, rope_norm, swiglu, attention, setup_torch


class LlamaGGUF(torch.nn.Module):
    def __init__(self, path, dtype=torch.float32):
        super().__init__()
        meta, t, _ = read_gguf(path)
        arch = meta["general.architecture"].value
        g = lambda k: meta[f"{arch}.{k}"].value
        self.meta, self.path = meta, path
        self.n_layer, self.n_embd = g("block_count"), g("embedding_length")
        self.n_head, self.n_head_kv = g("attention.head_count"), g("attention.head_count_kv")
        self.head_dim = self.n_embd // self.n_head
        self.n_rot = g("rope.dimension_count") if f"{arch}.rope.dimension_count" in meta else self.head_dim
        self.eps = g("attention.layer_norm_rms_epsilon")
        self.rope_base = g("rope.freq_base") if f"{arch}.rope.freq_base" in meta else 10000.0
        self.n_ff = g("feed_forward_length")
        P = lambda n: torch.nn.Parameter(torch.from_numpy(np.ascontiguousarray(t[n])).to(dtype), requires_grad=False)
        self.tok_embd = P("token_embd.weight")            # [V, D]
        self.output = P("output.weight") if "output.weight" in t else self.tok_embd
        self.output_norm = P("output_norm.weight")
        self.vocab = self.tok_embd.shape[0]
        self.layers = []
        for i in range(self.n_layer):
            b = f"blk.{i}."
            L = torch.nn.ParameterDict({k: P(b + k + ".weight") for k in
                ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"]})
            self.add_module(f"blk{i}", L)
            self.layers.append(L)

    def block_attn(self, L, x, cos, sin, past, mask):
        B, T, _ = x.shape
        h = rms_norm(x, L["attn_norm"], self.eps)
        q = F.linear(h, L["attn_q"]).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = F.linear(h, L["attn_k"]).view(B, T, self.n_head_kv, self.head_dim).transpose(1, 2)
        v = F.linear(h, L["attn_v"]).view(B, T, self.n_head_kv, self.head_dim).transpose(1, 2)
        q, k = rope_norm(q, cos, sin), rope_norm(k, cos, sin)
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        o = attention(q, k, v, mask).transpose(1, 2).reshape(B, T, -1)
        return F.linear(o, L["attn_output"]), (k, v)

    @torch.no_grad()
    def forward(self, tokens, taps=(), cache=None, logits=True):
        """tokens [B,T] int64. cache: list of (k,v) per layer from an earlier call (positions continue).
        Returns dict(logits [B,T,V], feats {l: [B,T,D]}, cache, hidden (pre-norm final residual))."""
        B, T = tokens.shape
        p0 = 0 if cache is None else cache[0][0].shape[2]
        pos = torch.arange(p0, p0 + T)
        cos, sin = rope_cache(pos, self.n_rot, self.rope_base)
        mask = (torch.arange(p0 + T)[None, :] <= pos[:, None])
        x = F.embedding(tokens, self.tok_embd)
        feats, new_cache = {}, []
        for i, L in enumerate(self.layers):
            if i in taps:
                feats[i] = x
            a, kv = self.block_attn(L, x, cos, sin, None if cache is None else cache[i], mask)
            new_cache.append(kv)
            x = x + a
            x = x + swiglu(rms_norm(x, L["ffn_norm"], self.eps), L["ffn_gate"], L["ffn_up"], L["ffn_down"])
        hn = rms_norm(x, self.output_norm, self.eps)
        if self.n_layer in taps:
            feats[self.n_layer] = hn
        out = {"feats": feats, "cache": new_cache, "hidden": x}
        if logits:
            out["logits"] = F.linear(hn, self.output)
        return out

    @torch.no_grad()
    def greedy(self, tokens, n):
        """Greedy continuation of n tokens for each row of tokens [B,T] (KV cached). Returns [B,n]."""
        o = self.forward(tokens)
        nxt = o["logits"][:, -1].argmax(-1)
        outs, cache = [nxt], o["cache"]
        for _ in range(n - 1):
            o = self.forward(nxt[:, None], cache=cache)
            cache = o["cache"]
            nxt = o["logits"][:, -1].argmax(-1)
            outs.append(nxt)
        return torch.stack(outs, 1)


def augur_logits(binary, model, ids):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.bin")
        subprocess.run([binary, "logits", "-m", model, "--prompt-ids", ",".join(map(str, ids)), "-o", out],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return np.fromfile(out, dtype=np.float32).reshape(len(ids), -1)


def cmd_check(a):
    setup_torch()
    m = LlamaGGUF(a.model)
    entries = _ref_prompts(json.load(open(a.ref)), a.model)[: a.n]
    # 1) greedy continuation vs llama.cpp's (needs no augur)
    for e in entries:
        g = m.greedy(torch.tensor([e["prompt_ids"]]), len(e["greedy"]))[0].tolist()
        same = next((i for i, (x, y) in enumerate(zip(g, e["greedy"])) if x != y), len(g))
        print(f"{e['id']}: greedy matches llama.cpp for {same}/{len(g)} tokens")
    if not a.augur or not os.path.exists(a.augur):
        print(f"augur binary {a.augur!r} not found: logit comparison skipped")
        return
    # 2) logits vs augur on prompt + llama.cpp greedy continuation
    prompts = [e["prompt_ids"] + e["greedy"] for e in entries]
    worst = 0.0
    for ids in prompts:
        ours = m.forward(torch.tensor([ids]))["logits"][0].numpy()
        theirs = augur_logits(a.augur, a.model, ids)
        d = float(np.abs(ours - theirs).max())
        worst = max(worst, d)
        print(f"{len(ids):4d} tokens  max|dlogit| = {d:.3e}  argmax agree {np.mean(ours.argmax(-1) == theirs.argmax(-1)):.3f}")
    print(f"worst max|dlogit| = {worst:.3e} over {len(prompts)} prompts")


def _ref_prompts(ref, model):
    """zoo-ref.json: models[<gguf file name>].prompts[] with prompt_ids and llama.cpp's greedy ids."""
    return ref["models"][os.path.basename(model)]["prompts"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sp = ap.add_subparsers(dest="cmd", required=True)
    c = sp.add_parser("check", help="compare torch logits with `augur logits`")
    c.add_argument("-m", "--model", required=True)
    c.add_argument("--augur", default="", help="augur binary (build/bin/augur)")
    c.add_argument("--ref", required=True, help="zoo-ref.json (prompt ids to test)")
    c.add_argument("-n", type=int, default=4, help="number of prompts")
    a = ap.parse_args()
    {"check": cmd_check}[a.cmd](a)


if __name__ == "__main__":
    main()
