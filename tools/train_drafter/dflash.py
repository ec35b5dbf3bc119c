#!/usr/bin/python3
"""DFlash block drafter (drafter-formats.md §2): model, batched block-diffusion loss, GGUF export, loader.

  dflash.py check-ref [DIR]   torch forward of tests/data/drafters/tiny-dflash.gguf vs tiny-dflash-ref.json

Injection (§2.2) of a target row with features f (taps concatenated in target_layers order):
g = RMSNorm((fc·f)·fc_scale; enc.output_norm); per layer K = RoPE_neox(RMSNorm_head(W_k·g; k_norm)), V = W_v·g.
Block (§2.3): [id_last, MASK×n] at positions n_past.., non-causal over the injected context + the whole
block, Qwen3-style layers (per-head q/k RMSNorm before NEOX RoPE), logits = output·RMSNorm(x; output_norm).
"""
import json, math, os, sys
import numpy as np
import torch
import torch.nn.functional as F
import gguf_io as G
from common import rms_norm, rope_cache, rope_neox, swiglu, attention

LAYER_KEYS = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm",
              "ffn_norm", "ffn_gate", "ffn_up", "ffn_down")


class DFlash(torch.nn.Module):
    def __init__(self, D, n_layer, n_head, n_head_kv, dh, n_ff, n_taps, eps, rope_base, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.D, self.n_layer, self.n_head, self.n_head_kv, self.dh, self.n_ff = D, n_layer, n_head, n_head_kv, dh, n_ff
        self.n_taps, self.eps, self.rope_base, self.fc_scale = n_taps, eps, rope_base, 1.0
        W = lambda o, i: torch.nn.Parameter(torch.randn(o, i, generator=g) * 0.02)
        ones = lambda n: torch.nn.Parameter(torch.ones(n))
        self.fc = W(D, n_taps * D)
        self.enc_norm = ones(D)
        self.layers = torch.nn.ModuleList()
        for _ in range(n_layer):
            self.layers.append(torch.nn.ParameterDict({
                "attn_norm": ones(D), "attn_q": W(n_head * dh, D), "attn_k": W(n_head_kv * dh, D),
                "attn_v": W(n_head_kv * dh, D), "attn_output": W(D, n_head * dh),
                "attn_q_norm": ones(dh), "attn_k_norm": ones(dh), "ffn_norm": ones(D),
                "ffn_gate": W(n_ff, D), "ffn_up": W(n_ff, D), "ffn_down": W(D, n_ff)}))
        self.output_norm = ones(D)

    @torch.no_grad()
    def init_from_target(self, tgt, tap_slot=-1):
        """Layer i <- target block L-N+i (q/k rows permuted from NORM to NEOX pair order), fc = identity on
        one tap (+ the 0.02 noise), output_norm <- the target's."""
        dh = self.dh
        perm = torch.cat([torch.arange(0, dh, 2), torch.arange(1, dh, 2)])
        for i, L in enumerate(self.layers):
            T = tgt.layers[tgt.n_layer - self.n_layer + i]
            for k in ("attn_norm", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"):
                L[k].copy_(T[k])
            for k, H in (("attn_q", self.n_head), ("attn_k", self.n_head_kv)):
                L[k].copy_(T[k].view(H, dh, -1)[:, perm].reshape(H * dh, -1))
        s = tap_slot % self.n_taps
        self.fc[:, s * self.D:(s + 1) * self.D] += torch.eye(self.D)
        self.output_norm.copy_(tgt.output_norm)

    def _rope(self, pos):
        """pos [N] or [B,N] -> cos/sin broadcastable to [B,H,N,dh/2]."""
        cos, sin = rope_cache(pos.reshape(-1), self.dh, self.rope_base)
        shp = (1, 1, pos.shape[-1], -1) if pos.dim() == 1 else (pos.shape[0], 1, pos.shape[1], -1)
        return cos.view(shp), sin.view(shp)

    def inject(self, feats, pos):
        """feats [B,T,n·D], pos [T] -> g [B,T,D] and per layer (K, V) [B,Hkv,T,dh] (§2.2)."""
        B, T, _ = feats.shape
        g = rms_norm(F.linear(feats, self.fc) * self.fc_scale, self.enc_norm, self.eps)
        cos, sin = self._rope(pos)
        kv = []
        for L in self.layers:
            k = F.linear(g, L["attn_k"]).view(B, T, self.n_head_kv, self.dh).transpose(1, 2)
            k = rope_neox(rms_norm(k, L["attn_k_norm"], self.eps), cos, sin)
            v = F.linear(g, L["attn_v"]).view(B, T, self.n_head_kv, self.dh).transpose(1, 2)
            kv.append((k, v))
        return g, kv

    def block(self, emb, pos, ctx_kv, mask):
        """emb [B,N,D] block token embeddings at pos ([N] or [B,N]); ctx_kv from inject; mask bool
        [B or 1,1,N,Tctx+N] (True = visible). Returns the prenorm hidden x [B,N,D] (§2.3)."""
        B, N, _ = emb.shape
        cos, sin = self._rope(pos)
        x = emb
        for L, (kc, vc) in zip(self.layers, ctx_kv):
            h = rms_norm(x, L["attn_norm"], self.eps)
            q = F.linear(h, L["attn_q"]).view(B, N, self.n_head, self.dh).transpose(1, 2)
            k = F.linear(h, L["attn_k"]).view(B, N, self.n_head_kv, self.dh).transpose(1, 2)
            v = F.linear(h, L["attn_v"]).view(B, N, self.n_head_kv, self.dh).transpose(1, 2)
            q = rope_neox(rms_norm(q, L["attn_q_norm"], self.eps), cos, sin)
            k = rope_neox(rms_norm(k, L["attn_k_norm"], self.eps), cos, sin)
            o = attention(q, torch.cat([kc, k], 2), torch.cat([vc, v], 2), mask)
            r = x + F.linear(o.transpose(1, 2).reshape(B, N, -1), L["attn_output"])
            x = r + swiglu(rms_norm(r, L["ffn_norm"], self.eps), L["ffn_gate"], L["ffn_up"], L["ffn_down"])
        return x

    def logits(self, x, out_w):
        return F.linear(rms_norm(x, self.output_norm, self.eps), out_w)


def block_batch(win, anchors, B, mask_id, T):
    """Blocks for a batch of windows. win [Bw,>=T] tokens, anchors [Bw,NB] in [1, T-B+1].
    Returns block tokens [Bw,NB·B], positions [Bw,NB·B], mask [Bw,1,NB·B,T+NB·B]: each block sees the
    context rows < its anchor and all of its own B keys (non-causal), nothing of the other blocks."""
    Bw, NB = anchors.shape
    pos = anchors[:, :, None] + torch.arange(B)                                   # [Bw,NB,B]
    toks = torch.full((Bw, NB, B), mask_id, dtype=torch.long)
    toks[:, :, 0] = win.gather(1, anchors)
    ctx = (torch.arange(T)[None, None, :] < anchors[:, :, None])                  # [Bw,NB,T]
    ctx = ctx[:, :, None, :].expand(Bw, NB, B, T).reshape(Bw, NB * B, T)
    bid = torch.arange(NB).repeat_interleave(B)
    own = (bid[:, None] == bid[None, :]).expand(Bw, NB * B, NB * B)
    return toks.view(Bw, NB * B), pos.view(Bw, NB * B), torch.cat([ctx, own], -1)[:, None]


def dflash_loss(dr, feats, tgt_logp, win, anchors, B, mask_id, emb_w, out_w, pos_decay=1.0):
    """feats [Bw,T,n·D] target taps of rows 0..T-1, tgt_logp [Bw,T,V] target log-probs (row r predicts
    token r+1). Block at anchor a: [t_a, MASK×(B-1)] at a..a+B-1, context rows 0..a-1. Position j >= 1 is
    trained with KL(target row a+j-1 ‖ draft), weight pos_decay^(j-1). Returns (loss, stats)."""
    Bw, T, _ = feats.shape
    NB = anchors.shape[1]
    _, kv = dr.inject(feats, torch.arange(T))
    toks, pos, mask = block_batch(win, anchors, B, mask_id, T)
    x = dr.block(F.embedding(toks, emb_w), pos, kv, mask).view(Bw, NB, B, -1)[:, :, 1:]
    lp = torch.log_softmax(dr.logits(x, out_w), -1)                                # [Bw,NB,B-1,V]
    rows = (pos.view(Bw, NB, B)[:, :, 1:] - 1).reshape(Bw, -1)                      # target rows a+j-1
    V = tgt_logp.shape[-1]
    t_lp = tgt_logp.gather(1, rows[:, :, None].expand(-1, -1, V)).view(Bw, NB, B - 1, V)
    kl = (t_lp.exp() * (t_lp - lp)).sum(-1)                                       # [Bw,NB,B-1]
    w = pos_decay ** torch.arange(B - 1, dtype=torch.float32)
    loss = (kl.mean((0, 1)) * w).sum() / w.sum()
    agree = (lp.argmax(-1) == t_lp.argmax(-1)).float()                           # [Bw,NB,B-1]
    st = {"kl": float(kl.mean()), "kl1": float(kl[..., 0].mean()), "top1_1": float(agree[..., 0].mean()),
          "top1_mean": float(agree.mean()), "prefix": float(agree.cumprod(-1).sum(-1).mean())}
    return loss, st


def sample_anchors(rng, Bw, NB, T, B):
    return torch.from_numpy(np.stack([np.sort(rng.choice(np.arange(1, T - B + 2), size=NB, replace=False))
                                      for _ in range(Bw)]).astype(np.int64))


@torch.no_grad()
def draft_block(dr, feats, c1, n, mask_id, emb_w, out_w):
    """Inference: feats [B,W,n·D] of the W committed rows (positions 0..W-1), c1 [B] = id_last.
    One block [c1, MASK×n] at W..W+n; returns the greedy drafts [B,n] of block positions 1..n."""
    Bb, W, _ = feats.shape
    _, kv = dr.inject(feats, torch.arange(W))
    toks = torch.full((Bb, n + 1), mask_id, dtype=torch.long)
    toks[:, 0] = c1
    mask = torch.ones(1, 1, n + 1, W + n + 1, dtype=torch.bool)
    x = dr.block(F.embedding(toks, emb_w), torch.arange(W, W + n + 1), kv, mask)
    return dr.logits(x[:, 1:], out_w).argmax(-1)


def export_gguf(model, path, target_meta, target_layers, block_size, mask_id, ftype="f16", name="dflash-drafter"):
    """Writes the drafter as llama.cpp's dflash GGUF (§2.1): no token_embd/output (the target's are used),
    no d2t, no fc.scale; tokenizer copied from the target plus tokenizer.ggml.mask_token_id."""
    K = G.KV
    U = lambda v: K(G.T_U32, int(v))
    arch = target_meta["general.architecture"].value
    meta = {"general.architecture": K(G.T_STR, "dflash"), "general.name": K(G.T_STR, name),
            "general.file_type": U(1 if ftype == "f16" else 0),
            "dflash.block_count": U(model.n_layer), "dflash.embedding_length": U(model.D),
            "dflash.feed_forward_length": U(model.n_ff), "dflash.attention.head_count": U(model.n_head),
            "dflash.attention.head_count_kv": U(model.n_head_kv),
            "dflash.attention.key_length": U(model.dh), "dflash.attention.value_length": U(model.dh),
            "dflash.attention.layer_norm_rms_epsilon": K(G.T_F32, float(model.eps)),
            "dflash.rope.freq_base": K(G.T_F32, float(model.rope_base)),
            "dflash.context_length": U(target_meta[f"{arch}.context_length"].value),
            "dflash.target_layers": K(G.T_ARR, [int(x) for x in target_layers], G.T_I32),
            "dflash.block_size": U(block_size)}
    meta.update({k: v for k, v in target_meta.items() if k.startswith("tokenizer.")})
    meta["tokenizer.ggml.mask_token_id"] = U(mask_id)
    mt = G.G_F16 if ftype == "f16" else G.G_F32
    d = lambda p: p.detach().cpu().numpy().astype(np.float32)
    tensors = [("fc.weight", d(model.fc), mt), ("enc.output_norm.weight", d(model.enc_norm), G.G_F32)]
    for i, L in enumerate(model.layers):
        for k in LAYER_KEYS:
            tensors.append((f"blk.{i}.{k}.weight", d(L[k]), G.G_F32 if "norm" in k else mt))
    tensors.append(("output_norm.weight", d(model.output_norm), G.G_F32))
    G.write_gguf(path, meta, tensors)


def load_gguf(path, dtype=torch.float32):
    """Loads a dflash GGUF. Returns (model, info) with info: target_layers, block_size, mask_token_id and
    the optional own token_embd [V,D], output [Vd,D], d2t [Vd] (None when the target's are used)."""
    meta, t, _ = G.read_gguf(path)
    v = lambda k: meta["dflash." + k].value
    D, NH = v("embedding_length"), v("attention.head_count")
    dh = v("attention.key_length") if "dflash.attention.key_length" in meta else D // NH
    taps = list(v("target_layers"))
    m = DFlash(D, v("block_count"), NH, v("attention.head_count_kv"), dh, v("feed_forward_length"), len(taps),
               v("attention.layer_norm_rms_epsilon"), v("rope.freq_base"))
    T = lambda n: torch.from_numpy(np.ascontiguousarray(t[n])).to(dtype)
    with torch.no_grad():
        m.fc.copy_(T("fc.weight")); m.enc_norm.copy_(T("enc.output_norm.weight"))
        m.output_norm.copy_(T("output_norm.weight"))
        for i, L in enumerate(m.layers):
            for k in LAYER_KEYS:
                L[k].copy_(T(f"blk.{i}.{k}.weight"))
    m.to(dtype)
    if "fc.scale" in t:
        m.fc_scale = float(t["fc.scale"].reshape(-1)[0])
    info = {"target_layers": taps, "block_size": v("block_size") if "dflash.block_size" in meta else 16,
            "mask_token_id": meta["tokenizer.ggml.mask_token_id"].value,
            "token_embd": T("token_embd.weight") if "token_embd.weight" in t else None,
            "output": T("output.weight") if "output.weight" in t else None,
            "d2t": torch.from_numpy(t["d2t"].astype(np.int64)) if "d2t" in t else None}
    return m, info


def check_ref(d):
    """Runs tiny-dflash.gguf in float64 torch through inject/block and compares with the NumPy reference."""
    ref = json.load(open(os.path.join(d, "tiny-dflash-ref.json")))
    m, info = load_gguf(os.path.join(d, ref["gguf"]), torch.float64)
    assert info["target_layers"] == ref["target_layers"] and info["mask_token_id"] == ref["mask_token_id"]
    V = ref["dims"]["n_vocab"]
    worst, ctx_f = 0.0, []
    for c in ("case1", "case2"):
        cs = ref[c]
        ctx_f += cs["features"]
        f = torch.tensor(ctx_f, dtype=torch.float64)[None]
        g, kv = m.inject(f, torch.arange(f.shape[1]))
        n0 = len(ctx_f) - len(cs["features"])
        dg = float((g[0, n0:] - torch.tensor(cs["g"], dtype=torch.float64)).abs().max())
        toks = torch.tensor(cs["block_tokens"])[None]
        N, s = toks.shape[1], cs["block_start"]
        x = m.block(F.embedding(toks, info["token_embd"]), torch.arange(s, s + N), kv,
                    torch.ones(1, 1, N, f.shape[1] + N, dtype=torch.bool))
        full = torch.full((N, V), float("-inf"), dtype=torch.float64)
        full[:, info["d2t"]] = m.logits(x, info["output"])[0]
        want = torch.tensor([[float("-inf") if y is None else y for y in r] for r in cs["logits"]], dtype=torch.float64)
        same_inf = bool((torch.isinf(full) == torch.isinf(want)).all())
        fin = ~torch.isinf(want)
        dl = float((full[fin] - want[fin]).abs().max())
        worst = max(worst, dl, dg)
        print(f"{c}: max|dg| {dg:.2e}  max|dlogit| {dl:.2e}  -inf pattern {'same' if same_inf else 'DIFFERENT'}")
    print("OK" if worst < 1e-6 else "MISMATCH", f"(worst {worst:.2e}; RoPE tables are float32)")
    return worst


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "check-ref":
        here = os.path.dirname(os.path.abspath(__file__))
        check_ref(sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "tests", "data", "drafters"))
    else:
        print(__doc__)
