#!/usr/bin/python3
"""Widens a drafter trained for a narrow target (zoo-target, H = 512) so it runs on the same target
inside a wider llama shell (zoo-wide, /work/shared/models/make_wide.py: H' = f·H with the narrow
matrices in the top-left corners, RMSNorm weights scaled by 1/sqrt(f) on the original dims), so the
wide target's residual stream's first H dims are (approximately) the narrow one's.

  widen.py --drafter IN.gguf --wide-target zoo-wide-f16.gguf --narrow-target zoo-target-f16.gguf -o OUT.gguf [--check]
  widen.py selftest      synthetic DFlash and EAGLE-3 (with norm_before_fc) drafters, widened and checked

s = 1/sqrt(f). Tap t's narrow columns c (0 <= c < H) sit at wide column t·H' + c.
EAGLE-3 (draft width D stays): fc' {3H', D}: fc'[:, tH'+c] = fc[:, tH+c], 0 elsewhere;
  eagle3.target_hidden_size = H'; norm_before_fc: enc.output_norm' {3H'} = s·w on those dims, 0 elsewhere
  (the mean over 3H' values with 3/4 of them ~0 is 1/f of the narrow mean); without its own
  token_embd/output the head gets the NARROW target's (D = H wide; the wide target's are H' wide).
DFlash (D = H -> D' = H', exact zero padding so the drafter's extra dims stay 0 up to the input
  embedding's): fc' {n·H', H'}: fc'[d, tH'+c] = fc[d, tH+c] for d < D, 0 elsewhere; every RMSNorm
  over D (enc.output_norm, attn_norm, ffn_norm, output_norm) -> [s·w, 0...]; attn_q/k/v, ffn_gate/up:
  zero input columns; attn_output, ffn_down: zero output rows; heads, kv heads and head_dim kept
  (dflash.attention.key_length/value_length written), q/k norms, sinks, fc.scale, d2t kept; own
  token_embd/output (if any) zero-padded to D'; dflash.embedding_length = H';
  dflash eps -> eps/f (see below; --keep-eps keeps it).
RMSNorm identity: x' = [x; e] with e the extra dims, w' = [s·w; 0]:
  x/sqrt((|x|²+|e|²)/(fH) + eps)·s·w = x/sqrt(mean(x²) + |e|²/H + f·eps)·w,
  i.e. exact up to the eps term (eps -> f·eps) and the extra dims' energy |e|²/H (0 in the drafter's
  own stream except for the wide target's embedding noise). zoo's token embeddings have mean(x²) ~ 5.6e-4,
  so eps 1e-5 -> 4e-5 would scale the first attn_norm's output by ~1/1.026 (max |dlogit| 0.14 in the
  selftest); with eps/f the D-norms are exact and only the per-head q/k norms (dh unchanged, mean(q²) >> eps)
  see the smaller eps (max |dlogit| ~3e-5).
Everything else (tokenizer keys, taps, block size, mask token) is kept. Writes OUT + OUT.manifest.json.
"""
import argparse, os, sys
import numpy as np
import gguf_io as G

EAGLE3_KNOWN = {"fc.weight", "enc.output_norm.weight", "token_embd.weight", "output.weight", "d2t",
                "rope_freqs.weight", "output_norm.weight"} | {f"blk.0.{k}.weight" for k in (
                    "attn_norm", "attn_norm_2", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                    "ffn_gate", "ffn_up", "ffn_down")}
DFLASH_LAYER = {"attn_norm": "norm", "ffn_norm": "norm", "attn_q": "in", "attn_k": "in", "attn_v": "in",
                "ffn_gate": "in", "ffn_up": "in", "attn_output": "out", "ffn_down": "out",
                "attn_q_norm": "keep", "attn_k_norm": "keep", "attn_sinks": "keep"}
DFLASH_REFUSED_KEYS = ("dflash.conv_kernel_size", "dflash.conv_group_size", "dflash.selector_rank",
                       "dflash.selector_top_k", "dflash.attention.sliding_window", "dflash.has_confidence_head")


class Refused(ValueError):
    pass


def _target_dims(meta):
    arch = meta["general.architecture"].value
    v = lambda k: meta[f"{arch}.{k}"].value
    return arch, v("embedding_length"), v("block_count")


def _norm(w, Hw, s):
    out = np.zeros(Hw, np.float32)
    out[:w.shape[0]] = w * s
    return out


def _taps_cols(w, n, H, Hw):
    """w [rows, n·H] -> [rows, n·Hw] with tap t's H columns at t·Hw."""
    out = np.zeros((w.shape[0], n * Hw), np.float32)
    for t in range(n):
        out[:, t * Hw:t * Hw + H] = w[:, t * H:(t + 1) * H]
    return out


def _pad(w, rows, cols):
    out = np.zeros((rows, cols), np.float32)
    out[:w.shape[0], :w.shape[1]] = w
    return out


def widen(drafter, wide_target, narrow_target, out, name=None, keep_eps=False):
    meta, t, info = G.read_gguf(drafter)
    wmeta, wt, _ = G.read_gguf(wide_target, want={"token_embd.weight"})
    nmeta, nt, ninfo = G.read_gguf(narrow_target, want={"token_embd.weight", "output.weight"})
    _, H, nL = _target_dims(nmeta)
    _, Hw, wL = _target_dims(wmeta)
    if Hw % H or Hw < H:
        raise Refused(f"wide target width {Hw} is not a multiple of the narrow {H}")
    if wL != nL:
        raise Refused(f"block counts differ: narrow {nL}, wide {wL}")
    if nmeta["tokenizer.ggml.tokens"].value != wmeta["tokenizer.ggml.tokens"].value:
        raise Refused("the two targets' vocabularies differ")
    ne, we = nt["token_embd.weight"], wt["token_embd.weight"]
    if we.shape[0] != ne.shape[0] or not np.array_equal(we[:, :H], ne):
        raise Refused("the wide target's token_embd does not hold the narrow one in its first columns")
    f, s = Hw // H, 1.0 / np.sqrt(Hw // H)
    arch = meta["general.architecture"].value
    types = {n: gt for n, (_, gt) in info.items()}
    mt = G.G_F16 if G.G_F16 in types.values() else G.G_F32    # 2-D type of the output (no Q8_0 writer)
    def ty(k, a):
        if types.get(k) in (G.G_I64, G.G_I32):
            return types[k]
        return G.G_F32 if a.ndim == 1 else mt
    new = {}
    if arch == "eagle3":
        unknown = set(t) - EAGLE3_KNOWN
        if unknown:
            raise Refused(f"eagle3: unknown tensors {sorted(unknown)}")
        if meta["eagle3.target_hidden_size"].value != H:
            raise Refused(f"eagle3.target_hidden_size {meta['eagle3.target_hidden_size'].value} != narrow target's {H}")
        n, D = 3, meta["eagle3.embedding_length"].value
        nbf = "eagle3.norm_before_fc" in meta and bool(meta["eagle3.norm_before_fc"].value)
        if nbf != ("enc.output_norm.weight" in t):
            raise Refused("eagle3.norm_before_fc and enc.output_norm.weight disagree")
        for k, a in t.items():
            if k == "fc.weight":
                new[k] = _taps_cols(a, n, H, Hw)
            elif k == "enc.output_norm.weight":
                new[k] = _taps_cols(a[None] * s, n, H, Hw)[0]
            else:
                new[k] = a
        if "token_embd.weight" not in t:
            if D != H:
                raise Refused(f"eagle3 head D {D} != narrow target width {H} without its own token_embd")
            new["token_embd.weight"] = ne
        if "output.weight" not in t:
            if "d2t" in t:
                raise Refused("eagle3 head has d2t but no output.weight")
            new["output.weight"] = nt["output.weight"] if "output.weight" in nt else ne
        meta["eagle3.target_hidden_size"] = G.KV(G.T_U32, Hw)
    elif arch == "dflash":
        bad = [k for k in DFLASH_REFUSED_KEYS if k in meta] + [k for k in t if "conv" in k or "selector" in k
                                                               or "markov" in k or "conf_proj" in k]
        if bad:
            raise Refused(f"dflash: DFlash2/DSpark/SWA pieces are not handled: {bad}")
        D = meta["dflash.embedding_length"].value
        if D != H:
            raise Refused(f"dflash width {D} != narrow target width {H}")
        n = len(meta["dflash.target_layers"].value)
        nh = meta["dflash.attention.head_count"].value
        dh = meta["dflash.attention.key_length"].value if "dflash.attention.key_length" in meta else D // nh
        for k, a in t.items():
            parts = k.split(".")
            if k == "fc.weight":
                new[k] = _pad(_taps_cols(a, n, H, Hw), Hw, n * Hw)
            elif k in ("enc.output_norm.weight", "output_norm.weight"):
                new[k] = _norm(a, Hw, s)
            elif k in ("fc.scale", "d2t"):
                new[k] = a
            elif k in ("token_embd.weight", "output.weight"):
                new[k] = _pad(a, a.shape[0], Hw)
            elif parts[0] == "blk" and len(parts) == 4 and parts[2] in DFLASH_LAYER and parts[3] == "weight":
                how = DFLASH_LAYER[parts[2]]
                new[k] = {"norm": lambda: _norm(a, Hw, s), "in": lambda: _pad(a, a.shape[0], Hw),
                          "out": lambda: _pad(a, Hw, a.shape[1]), "keep": lambda: a}[how]()
            else:
                raise Refused(f"dflash: unknown tensor {k}")
        meta["dflash.embedding_length"] = G.KV(G.T_U32, Hw)
        meta["dflash.attention.key_length"] = G.KV(G.T_U32, dh)
        meta["dflash.attention.value_length"] = G.KV(G.T_U32, dh)
        if not keep_eps:   # RMSNorm over D' = f·D with 3/4 zeros: eps -> eps/f makes the D-norms exact
            ek = "dflash.attention.layer_norm_rms_epsilon"
            meta[ek] = G.KV(G.T_F32, float(np.float32(meta[ek].value / f)))
    else:
        raise Refused(f"general.architecture {arch!r}: only eagle3 and dflash are widened")
    meta["general.name"] = G.KV(G.T_STR, name or os.path.basename(out).rsplit(".gguf", 1)[0])
    meta.pop("general.alignment", None)
    order = list(t) + [k for k in new if k not in t]
    G.write_gguf(out, meta, [(k, new[k], ty(k, new[k])) for k in order])
    from manifest import write_manifest
    write_manifest(out)
    return {"arch": arch, "H": H, "Hw": Hw, "factor": f}


# ---------------------------------------------------------------- checks (torch float64, the trainer's models)

def _check_eagle3(narrow, wide, ntgt, wtgt, T=12, seed=0):
    import torch, torch.nn.functional as F
    import eagle3 as E
    from common import rms_norm
    torch.manual_seed(seed)
    res = {}
    for tag, path in (("narrow", narrow), ("wide", wide)):
        meta, t, _ = G.read_gguf(path)
        m, taps = E.load_gguf(path, None)
        m = m.double()
        nbf = "enc.output_norm.weight" in t
        enc = torch.from_numpy(t["enc.output_norm.weight"]).double() if nbf else None
        emb = torch.from_numpy(t.get("token_embd.weight", ntgt["token_embd.weight"])).double()
        out = torch.from_numpy(t.get("output.weight", ntgt.get("output.weight", ntgt["token_embd.weight"]))).double()
        res[tag] = (m, enc, emb, out)
    m_n, H, Hw = res["narrow"][0], res["narrow"][0].Ht, res["wide"][0].Ht
    g = torch.Generator().manual_seed(seed)
    fn = torch.randn(1, T, 3 * H, generator=g, dtype=torch.float64)
    fw = torch.zeros(1, T, 3 * Hw, dtype=torch.float64)
    for k in range(3):
        fw[..., k * Hw:k * Hw + H] = fn[..., k * H:(k + 1) * H]
    toks = torch.randint(0, res["narrow"][2].shape[0], (1, T), generator=g)
    pos = torch.arange(T)
    logits = {}
    for tag, f in (("narrow", fn), ("wide", fw)):
        m, enc, emb, out = res[tag]
        if enc is not None:
            f = rms_norm(f, enc, m.eps)
        with torch.no_grad():
            gg = F.linear(f, m.fc)
            y = m.forward_causal(F.embedding(toks, emb), gg, pos)
            # one more step on the own y (the draft loop), so both halves of the decoder input are covered
            y2 = m.forward_causal(F.embedding(toks.roll(1, 1), emb), y, pos)
            logits[tag] = torch.cat([m.logits(y, out), m.logits(y2, out)], 1)
    d = (logits["narrow"] - logits["wide"]).abs().max().item()
    same = float((logits["narrow"].argmax(-1) == logits["wide"].argmax(-1)).double().mean())
    return {"max_abs_dlogit": d, "argmax_agree": same, "logit_scale": float(logits["narrow"].abs().max())}


def _check_dflash(narrow, wide, ntgt, wtgt, W=24, seed=0):
    import torch, torch.nn.functional as F
    import dflash as DF
    mn, inf_n = DF.load_gguf(narrow, torch.float64)
    mw, inf_w = DF.load_gguf(wide, torch.float64)
    H, Hw, n = mn.D, mw.D, mn.n_taps
    g = torch.Generator().manual_seed(seed)
    # features at the scale of the narrow target's embeddings/hidden states: std 1 per dim is generous;
    # the eps term matters more for small states, so two scales are tried
    ne = torch.from_numpy(ntgt["token_embd.weight"]).double()
    no = torch.from_numpy(ntgt.get("output.weight", ntgt["token_embd.weight"])).double()
    emb_n = inf_n["token_embd"].double() if inf_n["token_embd"] is not None else ne
    out_n = inf_n["output"].double() if inf_n["output"] is not None else no
    emb_pad = torch.zeros(emb_n.shape[0], Hw, dtype=torch.float64); emb_pad[:, :H] = emb_n
    out_pad = torch.zeros(out_n.shape[0], Hw, dtype=torch.float64); out_pad[:, :H] = out_n
    B = inf_n["block_size"]
    c1 = torch.randint(0, emb_n.shape[0], (1,), generator=g)
    results = {}
    for scale in (1.0, 0.05):
        fn = torch.randn(1, W, n * H, generator=g, dtype=torch.float64) * scale
        fw = torch.zeros(1, W, n * Hw, dtype=torch.float64)
        for k in range(n):
            fw[..., k * Hw:k * Hw + H] = fn[..., k * H:(k + 1) * H]
        toks = torch.full((1, B), inf_n["mask_token_id"], dtype=torch.long); toks[0, 0] = c1
        mask = torch.ones(1, 1, B, W + B, dtype=torch.bool)
        pos = torch.arange(W, W + B)
        with torch.no_grad():
            _, kvn = mn.inject(fn, torch.arange(W)); _, kvw = mw.inject(fw, torch.arange(W))
            ln = mn.logits(mn.block(F.embedding(toks, emb_n), pos, kvn, mask), out_n)
            lw = mw.logits(mw.block(F.embedding(toks, emb_pad), pos, kvw, mask), out_pad)
            r = {"max_abs_dlogit": (ln - lw).abs().max().item(),
                 "argmax_agree": float((ln.argmax(-1) == lw.argmax(-1)).double().mean()),
                 "logit_scale": float(ln.abs().max())}
            if wtgt is not None and inf_w["token_embd"] is None:
                we = torch.from_numpy(wtgt["token_embd.weight"]).double()
                wo = torch.from_numpy(wtgt.get("output.weight", wtgt["token_embd.weight"])).double()
                lr = mw.logits(mw.block(F.embedding(toks, we), pos, kvw, mask), wo)
                r["with_wide_target_embd_output"] = {
                    "max_abs_dlogit": (ln - lr).abs().max().item(),
                    "argmax_agree": float((ln.argmax(-1) == lr.argmax(-1)).double().mean())}
        results[f"feature_std_{scale}"] = r
    return results


def check(narrow, wide, narrow_target, wide_target=None):
    meta, _, _ = G.read_gguf(narrow, want=set())
    _, nt, _ = G.read_gguf(narrow_target, want={"token_embd.weight", "output.weight"})
    wt = G.read_gguf(wide_target, want={"token_embd.weight", "output.weight"})[1] if wide_target else None
    arch = meta["general.architecture"].value
    return (_check_eagle3 if arch == "eagle3" else _check_dflash)(narrow, wide, nt, wt)


def selftest(tmp, narrow_target, wide_target):
    """Synthetic narrow drafters (random weights at the narrow target's dims): a DFlash (2 layers, taps
    [2,5,8], block 8, norms random around 1) and an EAGLE-3 with norm_before_fc; widened and checked."""
    import torch
    import dflash as DF, eagle3 as E
    nmeta, _, _ = G.read_gguf(narrow_target, want=set())
    arch, H, nL = _target_dims(nmeta)
    v = lambda k: nmeta[f"{arch}.{k}"].value
    torch.manual_seed(7)
    out = {}
    d = DF.DFlash(H, 2, v("attention.head_count"), v("attention.head_count_kv"), H // v("attention.head_count"),
                  v("feed_forward_length"), 3, v("attention.layer_norm_rms_epsilon"), 10000.0, seed=3)
    with torch.no_grad():
        for p in d.parameters():
            if p.dim() == 1:
                p.copy_(1 + 0.3 * torch.randn_like(p))
            else:
                p.mul_(3.0)
    pn = os.path.join(tmp, "selftest-dflash-narrow.gguf"); pw = pn.replace("narrow", "wide")
    DF.export_gguf(d, pn, nmeta, [2, 5, nL], 8, 0, ftype="f32")
    for keep in (False, True):
        widen(pn, wide_target, narrow_target, pw, keep_eps=keep)
        out["dflash" + ("_keep_eps" if keep else "")] = check(pn, pw, narrow_target, wide_target)
    e = E.Eagle3(H, H, v("attention.head_count"), v("attention.head_count_kv"), v("feed_forward_length"),
                 v("attention.layer_norm_rms_epsilon"), 10000.0, seed=5)
    with torch.no_grad():
        for p in e.parameters():
            if p.dim() == 1:
                p.copy_(1 + 0.3 * torch.randn_like(p))
            else:
                p.mul_(3.0)
    pn = os.path.join(tmp, "selftest-eagle3-narrow.gguf"); pw = pn.replace("narrow", "wide")
    nbf_w = (1 + 0.3 * torch.randn(3 * H)).numpy().astype(np.float32)
    E.export_gguf(e, pn, nmeta, [2, 4, nL - 1], ftype="f32", extra={"eagle3.norm_before_fc": G.KV(G.T_BOOL, True)})
    m, t, _ = G.read_gguf(pn)   # add enc.output_norm (export_gguf does not write it)
    G.write_gguf(pn, {k: x for k, x in m.items() if k != "general.alignment"},
                 [(k, a, G.G_F32) for k, a in t.items()] + [("enc.output_norm.weight", nbf_w, G.G_F32)])
    widen(pn, wide_target, narrow_target, pw)
    out["eagle3_norm_before_fc"] = check(pn, pw, narrow_target, wide_target)
    return out


def main(argv=None):
    import json
    argv = sys.argv[1:] if argv is None else argv
    here = os.path.dirname(os.path.abspath(__file__))
    if argv and argv[0] == "selftest":
        ap = argparse.ArgumentParser(prog="widen.py selftest")
        ap.add_argument("--narrow-target", required=True); ap.add_argument("--wide-target", required=True)
        ap.add_argument("--tmp", default="/tmp")
        a = ap.parse_args(argv[1:])
        print(json.dumps(selftest(a.tmp, a.narrow_target, a.wide_target), indent=1))
        return
    ap = argparse.ArgumentParser(prog="widen", description=__doc__.split("\n")[0])
    add_args(ap)
    run(ap.parse_args(argv))


def add_args(ap):
    ap.add_argument("--drafter", required=True, help="narrow eagle3 or dflash GGUF")
    ap.add_argument("--wide-target", required=True); ap.add_argument("--narrow-target", required=True)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--name", default=None, help="general.name (default: the output file's stem)")
    ap.add_argument("--keep-eps", action="store_true",
                    help="DFlash: keep the RMSNorm eps (default: eps/f, exact for the D-wide norms; the per-head "
                         "q/k norms then use eps/f too)")
    ap.add_argument("--check", action="store_true",
                    help="torch float64 forward of narrow vs widened drafter on zero-padded random features")


def run(a):
    import json
    try:
        r = widen(a.drafter, a.wide_target, a.narrow_target, a.out, a.name, a.keep_eps)
    except Refused as e:
        sys.exit(f"widen: refused: {e}")
    print(f"wrote {a.out} ({os.path.getsize(a.out):,} bytes; {r['arch']}, target width {r['H']} -> {r['Hw']}) "
          f"+ {a.out}.manifest.json")
    if a.check:
        print(json.dumps(check(a.drafter, a.out, a.narrow_target, a.wide_target), indent=1))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
