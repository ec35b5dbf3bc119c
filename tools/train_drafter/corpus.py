#!/usr/bin/python3
"""Training corpus from Debian's Python sources, tokenized with the target's tokenizer (via augur).

Files: all *.py under the roots, UTF-8, non-empty, < 400 KB. The zoo's held-out split
(int(sha1(path).hexdigest(), 16) % 100 < 2, path = absolute path string) is kept out of training, and so
is any file containing one of prompts-code.jsonl's prompts verbatim. Each file becomes
[BOS] tokens [EOS]; files are concatenated (random file order, seeded) into one int16 stream.

  corpus.py build --augur BIN -m TARGET.gguf --prompts prompts-code.jsonl [--max-tokens N]
"""
import argparse, hashlib, json, os, subprocess, sys, time
import numpy as np

ROOTS = ["/usr/lib/python3.11", "/usr/lib/python3/dist-packages"]
MAX_BYTES = 400 * 1024
BOS, EOS = 1, 2


def default_cache_dir():
    return os.path.join(os.path.expanduser("~"), ".cache", "augur-train-drafter")


def is_held_out(path):
    return int(hashlib.sha1(path.encode()).hexdigest(), 16) % 100 < 2


def list_files(roots=ROOTS):
    """(train, held_out) lists of (path, text), sorted by path."""
    train, held = [], []
    for root in roots:
        for d, _, names in os.walk(root):
            for n in names:
                if not n.endswith(".py"):
                    continue
                p = os.path.join(d, n)
                try:
                    if os.path.islink(p) or not os.path.isfile(p) or os.path.getsize(p) >= MAX_BYTES:
                        continue
                    text = open(p, "rb").read().decode("utf-8")
                except (UnicodeDecodeError, OSError):
                    continue
                if text:
                    (held if is_held_out(p) else train).append((p, text))
    return sorted(train), sorted(held)


def tokenize(augur, model, path):
    out = subprocess.run([augur, "tokenize", "-m", model, "-f", path, "--no-bos"], check=True,
                         capture_output=True, text=True).stdout.split()
    return [int(x) for x in out]


def build_stream(augur, model, files, max_tokens, seed, label):
    order = np.random.default_rng(seed).permutation(len(files))
    chunks, n, t0 = [], 0, time.time()
    for i, j in enumerate(order):
        ids = [BOS] + tokenize(augur, model, files[j][0]) + [EOS]
        chunks.append(np.asarray(ids, dtype=np.int16))
        n += len(ids)
        if i % 20 == 0 or n >= max_tokens:
            sys.stderr.write(f"\r{label}: {i + 1} files, {n:,} tokens, {time.time() - t0:.0f}s")
        if n >= max_tokens:
            break
    sys.stderr.write("\n")
    return np.concatenate(chunks), i + 1


def corpus_paths(cache_dir, model, max_tokens, seed):
    tag = hashlib.sha1(f"{os.path.basename(model)}|{os.path.getsize(model)}|{max_tokens}|{seed}".encode()).hexdigest()[:10]
    return (os.path.join(cache_dir, f"train-{tag}.npy"), os.path.join(cache_dir, f"heldout-{tag}.npy"),
            os.path.join(cache_dir, f"corpus-{tag}.json"))


def build(augur, model, prompts_path, cache_dir, max_tokens=4_000_000, heldout_tokens=200_000, seed=1234):
    """Builds (or loads from cache) the train and held-out token streams. Returns (train, heldout)."""
    tr_p, ho_p, info_p = corpus_paths(cache_dir, model, max_tokens, seed)
    if os.path.exists(tr_p) and os.path.exists(ho_p):
        return np.load(tr_p), np.load(ho_p)
    os.makedirs(cache_dir, exist_ok=True)
    prompts = [json.loads(l)["prompt"] for l in open(prompts_path)]
    train, held = list_files()
    n_all = len(train)
    train = [(p, t) for p, t in train if not any(q in t for q in prompts)]
    print(f"files: {n_all + len(held)} usable, held-out split {len(held)}, "
          f"train {len(train)} after dropping {n_all - len(train)} containing a prompt")
    tr, n_tr = build_stream(augur, model, train, max_tokens, seed, "train")
    ho, n_ho = build_stream(augur, model, held, heldout_tokens, seed, "held-out")
    np.save(tr_p, tr)
    np.save(ho_p, ho)
    json.dump({"train_files_total": len(train), "train_files_used": n_tr, "train_tokens": int(len(tr)),
               "heldout_files_total": len(held), "heldout_files_used": n_ho, "heldout_tokens": int(len(ho)),
               "max_tokens": max_tokens, "seed": seed, "dropped_for_prompts": n_all - len(train)},
              open(info_p, "w"), indent=1)
    return tr, ho


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sp = ap.add_subparsers(dest="cmd", required=True)
    b = sp.add_parser("build")
    b.add_argument("--augur", required=True, help="augur binary (for `augur tokenize`)")
    b.add_argument("-m", "--model", required=True, help="target GGUF (its tokenizer)")
    b.add_argument("--prompts", required=True, help="prompts-code.jsonl (files containing a prompt are excluded)")
    b.add_argument("--cache-dir", default=default_cache_dir())
    b.add_argument("--max-tokens", type=int, default=4_000_000)
    b.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    tr, ho = build(a.augur, a.model, a.prompts, a.cache_dir, a.max_tokens, seed=a.seed)
    print(f"train {len(tr):,} tokens, held-out {len(ho):,} tokens in {a.cache_dir}")


if __name__ == "__main__":
    main()
