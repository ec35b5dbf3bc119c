#!/usr/bin/python3
"""Hand-made tiny EAGLE-3 GGUF + a float64 NumPy reference of its forward (drafter-formats.md §1.3).

NumPy only (no torch), independent of eagle3.py. Writes into --out-dir (default tests/data/drafters):
  tiny-eagle3.gguf                 random F32 weights, own token_embd {D,V}, output {D,Vd}, d2t I64 {Vd}
  tiny-eagle3.gguf.manifest.json   metadata/tensor manifest
  tiny-eagle3-ref.json             inputs and float64 g, y, full-vocab logits for two cases
Logit entries of tokens not in d2t are -inf in the engine; the json writes them as null.
"""
import argparse, json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
import gguf_io as G
from manifest import write_manifest

Ht, D, NH, NKV, DH, FF, V, VD = 32, 32, 4, 2, 8, 48, 64, 48
EPS = float(np.float32(1e-5))   # what a loader reads back from the F32 key
THETA = 10000.0
TARGET_LAYERS = [1, 2, 3]


def make_weights(seed):
    rng = np.random.default_rng(seed)
    w = lambda o, i, s=1.0: (rng.standard_normal((o, i)) * s / np.sqrt(i)).astype(np.float32)
    norm = lambda n: (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    return {
        "token_embd.weight": (rng.standard_normal((V, D))).astype(np.float32),
        "fc.weight": w(D, 3 * Ht),
        "blk.0.attn_norm.weight": norm(D), "blk.0.attn_norm_2.weight": norm(D),
        "blk.0.attn_q.weight": w(NH * DH, 2 * D), "blk.0.attn_k.weight": w(NKV * DH, 2 * D),
        "blk.0.attn_v.weight": w(NKV * DH, 2 * D), "blk.0.attn_output.weight": w(D, NH * DH),
        "blk.0.ffn_norm.weight": norm(D),
        "blk.0.ffn_gate.weight": w(FF, D), "blk.0.ffn_up.weight": w(FF, D), "blk.0.ffn_down.weight": w(D, FF),
        "output_norm.weight": norm(D),
        "output.weight": w(VD, D, 2.0),
        "d2t": np.sort(rng.choice(np.arange(3, V), size=VD, replace=False)).astype(np.int64),
    }


def rms(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * w


def rope(x, pos):
    """NORM rope on [..., NH, DH] at integer position pos: adjacent pairs rotated."""
    i = np.arange(DH // 2)
    ang = pos * THETA ** (-2.0 * i / DH)
    c, s = np.cos(ang), np.sin(ang)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


class Ref:
    """float64 decoder with a KV cache, fed one (token, g, pos) row at a time."""
    def __init__(self, W):
        self.W = {k: v.astype(np.float64) if v.dtype != np.int64 else v for k, v in W.items()}
        self.K, self.Vc = [], []

    def encode(self, f):
        return self.W["fc.weight"] @ f

    def step(self, tok, g, pos):
        W = self.W
        e = rms(W["token_embd.weight"][tok], W["blk.0.attn_norm.weight"])
        gn = rms(g, W["blk.0.attn_norm_2.weight"])
        x = np.concatenate([e, gn])                                  # embedding first, 2D wide
        q = rope((W["blk.0.attn_q.weight"] @ x).reshape(NH, DH), pos)
        k = rope((W["blk.0.attn_k.weight"] @ x).reshape(NKV, DH), pos)
        v = (W["blk.0.attn_v.weight"] @ x).reshape(NKV, DH)
        self.K.append(k); self.Vc.append(v)
        K, Vv = np.stack(self.K), np.stack(self.Vc)                   # [n, NKV, DH]
        o = np.empty((NH, DH))
        for h in range(NH):
            kh = h // (NH // NKV)                                     # GQA
            s = K[:, kh] @ q[h] / np.sqrt(DH)
            p = np.exp(s - s.max()); p /= p.sum()
            o[h] = p @ Vv[:, kh]
        r = W["blk.0.attn_output.weight"] @ o.reshape(-1) + g         # norm_before_residual = false
        u = rms(r, W["blk.0.ffn_norm.weight"])
        a = W["blk.0.ffn_gate.weight"] @ u
        y = r + W["blk.0.ffn_down.weight"] @ (a / (1 + np.exp(-a)) * (W["blk.0.ffn_up.weight"] @ u))
        ld = W["output.weight"] @ rms(y, W["output_norm.weight"])
        full = np.full(V, -np.inf)
        full[W["d2t"]] = ld                                           # reduced-vocab scatter
        return y, full


def js(a):
    return [None if not np.isfinite(x) else float(x) for x in np.asarray(a, dtype=np.float64).reshape(-1)]


def write_gguf(W, path):
    K = G.KV; U = lambda v: K(G.T_U32, v)
    toks = ["<unk>", "<s>", "</s>"] + [f"\u2581t{i}" for i in range(3, V)]
    meta = {"general.architecture": K(G.T_STR, "eagle3"), "general.name": K(G.T_STR, "tiny-eagle3"),
            "general.file_type": U(0),
            "eagle3.block_count": U(1), "eagle3.embedding_length": U(D), "eagle3.feed_forward_length": U(FF),
            "eagle3.attention.head_count": U(NH), "eagle3.attention.head_count_kv": U(NKV),
            "eagle3.attention.layer_norm_rms_epsilon": K(G.T_F32, EPS),
            "eagle3.rope.freq_base": K(G.T_F32, THETA), "eagle3.rope.dimension_count": U(DH),
            "eagle3.context_length": U(64), "eagle3.vocab_size": U(V),
            "eagle3.target_layers": K(G.T_ARR, TARGET_LAYERS, G.T_I32),
            "eagle3.target_hidden_size": U(Ht), "eagle3.norm_before_residual": K(G.T_BOOL, False),
            "tokenizer.ggml.model": K(G.T_STR, "llama"), "tokenizer.ggml.pre": K(G.T_STR, "default"),
            "tokenizer.ggml.tokens": K(G.T_ARR, toks, G.T_STR),
            "tokenizer.ggml.scores": K(G.T_ARR, [0.0, 0.0, 0.0] + [-float(i) for i in range(3, V)], G.T_F32),
            "tokenizer.ggml.token_type": K(G.T_ARR, [2, 3, 3] + [1] * (V - 3), G.T_I32),
            "tokenizer.ggml.bos_token_id": U(1), "tokenizer.ggml.eos_token_id": U(2),
            "tokenizer.ggml.unknown_token_id": U(0)}
    order = ["token_embd.weight", "fc.weight", "blk.0.attn_norm.weight", "blk.0.attn_norm_2.weight",
             "blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight",
             "blk.0.ffn_norm.weight", "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight",
             "output_norm.weight", "output.weight", "d2t"]
    G.write_gguf(path, meta, [(n, W[n], G.G_I64 if n == "d2t" else G.G_F32) for n in order])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                      "tests", "data", "drafters"))
    ap.add_argument("--seed", type=int, default=20261204)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    W = make_weights(a.seed)
    path = os.path.join(a.out_dir, "tiny-eagle3.gguf")
    write_gguf(W, path)
    write_manifest(path)
    rng = np.random.default_rng(a.seed + 1)
    feats = rng.standard_normal((6, 3 * Ht)).astype(np.float32)   # given as F32 values
    toks = [int(t) for t in rng.integers(3, V, size=6)]
    ext_toks = [int(t) for t in rng.integers(3, V, size=3)]
    ref = Ref(W)
    rows = []
    for P in range(6):
        g = ref.encode(feats[P].astype(np.float64))
        y, lg = ref.step(toks[P], g, P)
        rows.append({"g": js(g), "y": js(y), "logits": js(lg), "argmax": int(np.argmax(lg))})
    ext, y_prev = [], np.array(rows[-1]["y"])
    for s, P in enumerate((6, 7, 8)):
        y, lg = ref.step(ext_toks[s], y_prev, P)                     # own prenorm y goes straight in as g
        ext.append({"token": ext_toks[s], "pos": P, "g": js(y_prev), "y": js(y), "logits": js(lg),
                    "argmax": int(np.argmax(lg))})
        y_prev = y
    out = {
        "description": "EAGLE-3 forward per drafter-formats.md §1.3 in float64 NumPy from the F32 weights of "
                       "tiny-eagle3.gguf. Case 1: rows P=0..5 are (token t_{P+1}, g_P = fc . features[P]) at "
                       "position P, causal over the rows. Case 2 continues the same KV: 3 autoregressive steps at "
                       "positions 6,7,8 with the given tokens, each fed the previous row's prenorm y as g (no fc). "
                       "Full-vocab logits: tokens not in d2t are -inf in the engine and null here.",
        "gguf": "tiny-eagle3.gguf", "dims": {"Ht": Ht, "D": D, "n_head": NH, "n_head_kv": NKV, "head_dim": DH,
                                              "n_ff": FF, "n_vocab": V, "n_draft_vocab": VD},
        "eps": EPS, "rope_theta": THETA, "rope_type": "norm (adjacent pairs)", "target_layers": TARGET_LAYERS,
        "case1": {"features": [js(f) for f in feats], "tokens": toks, "positions": list(range(6)), "rows": rows},
        "case2": {"steps": ext},
    }
    with open(os.path.join(a.out_dir, "tiny-eagle3-ref.json"), "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path, "and tiny-eagle3-ref.json")


if __name__ == "__main__":
    main()
