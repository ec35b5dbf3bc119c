#!/usr/bin/python3
"""Hand-made tiny DFlash GGUF + a float64 NumPy reference of its forward (drafter-formats.md §2.2, §2.3).

NumPy only (no torch), independent of dflash.py. Writes into --out-dir (default tests/data/drafters):
  tiny-dflash.gguf                 random F32 weights, 2 layers, own token_embd {D,V}, output {D,Vd}, d2t I64 {Vd}
  tiny-dflash.gguf.manifest.json   metadata/tensor manifest
  tiny-dflash-ref.json             injected features, float64 g and full-vocab block logits for two cases
Logit entries of tokens not in d2t are -inf in the engine; the json writes them as null.
"""
import argparse, json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
import gguf_io as G
from manifest import write_manifest

Ht, D, NL, NH, NKV, DH, FF, V, VD = 32, 32, 2, 4, 2, 16, 48, 64, 48
EPS = float(np.float32(1e-5))   # what a loader reads back from the F32 key
THETA = 10000.0
TARGET_LAYERS = [1, 3]
BLOCK_SIZE = 4
MASK = 5
FC_SCALE = 0.9
CTX = 256


def make_weights(seed):
    rng = np.random.default_rng(seed)
    w = lambda o, i, s=1.0: (rng.standard_normal((o, i)) * s / np.sqrt(i)).astype(np.float32)
    norm = lambda n: (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    W = {"token_embd.weight": rng.standard_normal((V, D)).astype(np.float32),
         "fc.weight": w(D, len(TARGET_LAYERS) * Ht),
         "fc.scale": np.array([FC_SCALE], dtype=np.float32),
         "enc.output_norm.weight": norm(D)}
    for i in range(NL):
        p = f"blk.{i}."
        W.update({p + "attn_norm.weight": norm(D),
                  p + "attn_q.weight": w(NH * DH, D), p + "attn_k.weight": w(NKV * DH, D),
                  p + "attn_v.weight": w(NKV * DH, D), p + "attn_output.weight": w(D, NH * DH),
                  p + "attn_q_norm.weight": norm(DH), p + "attn_k_norm.weight": norm(DH),
                  p + "ffn_norm.weight": norm(D),
                  p + "ffn_gate.weight": w(FF, D), p + "ffn_up.weight": w(FF, D), p + "ffn_down.weight": w(D, FF)})
    W["output_norm.weight"] = norm(D)
    W["output.weight"] = w(VD, D, 2.0)
    W["d2t"] = np.sort(rng.choice(np.arange(3, V), size=VD, replace=False)).astype(np.int64)
    return W


def rms(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * w


def rope(x, pos):
    """NEOX rope on [..., DH] at integer position pos: pairs (i, i + DH/2) rotated."""
    i = np.arange(DH // 2)
    ang = pos * THETA ** (-2.0 * i / DH)
    c, s = np.cos(ang), np.sin(ang)
    x0, x1 = x[..., :DH // 2], x[..., DH // 2:]
    return np.concatenate([x0 * c - x1 * s, x0 * s + x1 * c], axis=-1)


class Ref:
    """float64 DFlash drafter with a per-layer KV cache of injected context rows."""
    def __init__(self, W):
        self.W = {k: v.astype(np.float64) if v.dtype != np.int64 else v for k, v in W.items()}
        self.K = [[] for _ in range(NL)]   # per layer: list of [NKV, DH] (post norm + rope)
        self.Vc = [[] for _ in range(NL)]

    def inject(self, f, pos):
        """§2.2: one target row f (n·Ht) at position pos -> g, and K/V into every layer's cache."""
        W = self.W
        g = rms((W["fc.weight"] @ f) * W["fc.scale"][0], W["enc.output_norm.weight"])
        for l in range(NL):
            p = f"blk.{l}."
            k = rope(rms((W[p + "attn_k.weight"] @ g).reshape(NKV, DH), W[p + "attn_k_norm.weight"]), pos)
            v = (W[p + "attn_v.weight"] @ g).reshape(NKV, DH)
            self.K[l].append(k); self.Vc[l].append(v)
        return g

    def block(self, toks, start):
        """§2.3: tokens at positions start.., non-causal over context + the whole block; not cached."""
        W = self.W
        n = len(toks)
        pos = np.arange(start, start + n)
        x = W["token_embd.weight"][toks]                                   # [n, D], no scale
        for l in range(NL):
            p = f"blk.{l}."
            h = rms(x, W[p + "attn_norm.weight"])
            q = (h @ W[p + "attn_q.weight"].T).reshape(n, NH, DH)
            k = (h @ W[p + "attn_k.weight"].T).reshape(n, NKV, DH)
            v = (h @ W[p + "attn_v.weight"].T).reshape(n, NKV, DH)
            q = rope(rms(q, W[p + "attn_q_norm.weight"]), pos[:, None, None])
            k = rope(rms(k, W[p + "attn_k_norm.weight"]), pos[:, None, None])
            Kall = np.concatenate([np.stack(self.K[l]).reshape(-1, NKV, DH), k]) if self.K[l] else k
            Vall = np.concatenate([np.stack(self.Vc[l]).reshape(-1, NKV, DH), v]) if self.Vc[l] else v
            o = np.empty((n, NH, DH))
            for hh in range(NH):
                kh = hh // (NH // NKV)                                      # GQA
                s = q[:, hh] @ Kall[:, kh].T / np.sqrt(DH)                  # [n, ctx+n], no causal mask
                pr = np.exp(s - s.max(-1, keepdims=True)); pr /= pr.sum(-1, keepdims=True)
                o[:, hh] = pr @ Vall[:, kh]
            r = x + o.reshape(n, NH * DH) @ W[p + "attn_output.weight"].T
            u = rms(r, W[p + "ffn_norm.weight"])
            a = u @ W[p + "ffn_gate.weight"].T
            x = r + (a / (1 + np.exp(-a)) * (u @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
        ld = rms(x, W["output_norm.weight"]) @ W["output.weight"].T         # [n, Vd]
        full = np.full((n, V), -np.inf)
        full[:, W["d2t"]] = ld                                              # reduced-vocab scatter
        return full


def js(a):
    return [None if not np.isfinite(x) else float(x) for x in np.asarray(a, dtype=np.float64).reshape(-1)]


def write_gguf(W, path):
    K = G.KV; U = lambda v: K(G.T_U32, v)
    toks = ["<unk>", "<s>", "</s>"] + [f"\u2581t{i}" for i in range(3, V)]
    meta = {"general.architecture": K(G.T_STR, "dflash"), "general.name": K(G.T_STR, "tiny-dflash"),
            "general.file_type": U(0),
            "dflash.block_count": U(NL), "dflash.embedding_length": U(D), "dflash.feed_forward_length": U(FF),
            "dflash.attention.head_count": U(NH), "dflash.attention.head_count_kv": U(NKV),
            "dflash.attention.key_length": U(DH), "dflash.attention.value_length": U(DH),
            "dflash.attention.layer_norm_rms_epsilon": K(G.T_F32, EPS),
            "dflash.rope.freq_base": K(G.T_F32, THETA), "dflash.context_length": U(CTX),
            "dflash.target_layers": K(G.T_ARR, TARGET_LAYERS, G.T_I32),
            "dflash.block_size": U(BLOCK_SIZE),
            "tokenizer.ggml.model": K(G.T_STR, "llama"), "tokenizer.ggml.pre": K(G.T_STR, "default"),
            "tokenizer.ggml.tokens": K(G.T_ARR, toks, G.T_STR),
            "tokenizer.ggml.scores": K(G.T_ARR, [0.0, 0.0, 0.0] + [-float(i) for i in range(3, V)], G.T_F32),
            "tokenizer.ggml.token_type": K(G.T_ARR, [2, 3, 3] + [1] * (V - 3), G.T_I32),
            "tokenizer.ggml.bos_token_id": U(1), "tokenizer.ggml.eos_token_id": U(2),
            "tokenizer.ggml.unknown_token_id": U(0), "tokenizer.ggml.mask_token_id": U(MASK)}
    order = ["token_embd.weight", "fc.weight", "fc.scale", "enc.output_norm.weight"]
    for i in range(NL):
        order += [f"blk.{i}.{n}.weight" for n in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                                   "attn_q_norm", "attn_k_norm", "ffn_norm", "ffn_gate",
                                                   "ffn_up", "ffn_down")]
    order += ["output_norm.weight", "output.weight", "d2t"]
    G.write_gguf(path, meta, [(n, W[n], G.G_I64 if n == "d2t" else G.G_F32) for n in order])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                      "tests", "data", "drafters"))
    ap.add_argument("--seed", type=int, default=20261205)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    W = make_weights(a.seed)
    path = os.path.join(a.out_dir, "tiny-dflash.gguf")
    write_gguf(W, path)
    write_manifest(path)
    rng = np.random.default_rng(a.seed + 1)
    nf = len(TARGET_LAYERS) * Ht
    f1 = rng.standard_normal((6, nf)).astype(np.float32)            # given as F32 values
    f2 = rng.standard_normal((3, nf)).astype(np.float32)
    ref = Ref(W)
    g1 = [ref.inject(f1[P].astype(np.float64), P) for P in range(6)]
    b1 = [7, MASK, MASK, MASK]
    lg1 = ref.block(b1, 6)                                           # block K/V are not kept
    g2 = [ref.inject(f2[i].astype(np.float64), 6 + i) for i in range(3)]
    b2 = [11, MASK, MASK]
    lg2 = ref.block(b2, 9)
    out = {
        "description": "DFlash forward per drafter-formats.md §2.2/§2.3 in float64 NumPy from the F32 weights of "
                       "tiny-dflash.gguf. Injection of a context row P with features f (taps concatenated in "
                       "target_layers order): g = RMSNorm((fc . f) * fc.scale; enc.output_norm); per layer "
                       "K = RoPE_neox(RMSNorm_perhead(W_k g; attn_k_norm), P), V = W_v g into that layer's cache. "
                       "Block: token_embd rows (no scale) at positions block_start.., per layer pre-norm attention "
                       "with per-head q/k RMSNorm before NEOX RoPE, scale 1/sqrt(head_dim), GQA, NON-causal over all "
                       "injected context keys plus all block keys; SwiGLU FFN; logits = output . RMSNorm(x; "
                       "output_norm) scattered through d2t. Case 1: context rows 0..5, block at 6..9. Case 2 "
                       "continues the same cache with context rows 6..8 (case 1's block K/V are NOT in the cache), "
                       "block at 9..11. logits row j = block position j; tokens not in d2t are -inf in the engine "
                       "and null here.",
        "gguf": "tiny-dflash.gguf",
        "dims": {"Ht": Ht, "D": D, "n_layer": NL, "n_head": NH, "n_head_kv": NKV, "head_dim": DH, "n_ff": FF,
                 "n_vocab": V, "n_draft_vocab": VD},
        "eps": EPS, "rope_theta": THETA, "rope_type": "neox", "target_layers": TARGET_LAYERS,
        "block_size": BLOCK_SIZE, "mask_token_id": MASK, "fc_scale": FC_SCALE,
        "case1": {"features": [js(f) for f in f1], "g": [js(g) for g in g1], "block_tokens": b1,
                  "block_start": 6, "logits": [js(r) for r in lg1]},
        "case2": {"features": [js(f) for f in f2], "g": [js(g) for g in g2], "block_tokens": b2,
                  "block_start": 9, "logits": [js(r) for r in lg2]},
    }
    with open(os.path.join(a.out_dir, "tiny-dflash-ref.json"), "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path, "and tiny-dflash-ref.json")


if __name__ == "__main__":
    main()
