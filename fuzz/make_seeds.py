#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz targets (fuzz/corpus/<target>/) from our real files.

  fuzz/make_seeds.py [SHARED_DIR]     (default ../shared next to the checkout)

gguf_file: every GGUF in SHARED/fixtures, SHARED/fixtures/tokenizers, models/ and
tests/data/drafters as a miniature (every metadata key, arrays cut to their first 8 items, every
tensor declared with one block per row and zero data), plus a truncated and two bit-flipped
variants of each. model_load, drafter_load: edit scripts (byte strings the target decodes). tokenizer: the
llama.cpp test vectors and special-token texts, for each vocabulary. chat_template: every shared
template with a context from cases.jsonl. server_request: request bodies
(after the endpoint byte). cli_parsers: lists.
FuzzedDataProvider reads integers from the END of an input and strings from the front, so seeds
put their selector bytes last. Deterministic: the same files give the same corpus.
"""
import hashlib
import json
import random
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared"
OUT = ROOT / "fuzz" / "corpus"

# ggml type id -> (elements per block, bytes per block)
BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
          9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176),
          14: (256, 210), 15: (256, 292), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8),
          28: (1, 8), 30: (1, 2)}
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class Cursor:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def string(self):
        return self.take(self.u64())


def value(cur, vtype, cut):
    """Raw bytes of one value of vtype, arrays cut to `cut` items."""
    if vtype in SCALAR:
        return cur.take(SCALAR[vtype])
    if vtype == 8:
        s = cur.string()
        return struct.pack("<Q", len(s)) + s
    assert vtype == 9, vtype
    etype, n = cur.u32(), cur.u64()
    items = [value(cur, etype, cut) for _ in range(n)]
    kept = items[:cut]
    return struct.pack("<IQ", etype, len(kept)) + b"".join(kept)


def miniature(path):
    """The file's metadata and tensor list in a few kilobytes, still a valid GGUF."""
    cur = Cursor(path.read_bytes())
    assert cur.take(4) == b"GGUF"
    version, n_tensors, n_kv = cur.u32(), cur.u64(), cur.u64()
    kv = b""
    alignment = 32
    for _ in range(n_kv):
        key = cur.string()
        vtype = cur.u32()
        raw = value(cur, vtype, 8)
        if key == b"general.alignment":
            alignment = struct.unpack("<I", raw)[0]
        kv += struct.pack("<Q", len(key)) + key + struct.pack("<I", vtype) + raw
    infos, offset = b"", 0
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.u32()
        [cur.u64() for _ in range(n_dims)]
        ttype = cur.u32()
        cur.u64()
        elems, nbytes = BLOCKS.get(ttype, (1, 4))
        ne = [elems] + [1] * (n_dims - 1)
        infos += struct.pack("<Q", len(name)) + name + struct.pack("<I", n_dims)
        infos += b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", ttype, offset)
        offset += (nbytes + alignment - 1) // alignment * alignment
    head = b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv) + kv + infos
    head += b"\0" * (-len(head) % alignment)
    return head + b"\0" * offset


def write(target, name, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def gguf_seeds():
    files = sorted((SHARED / "fixtures").glob("*.gguf"))
    files += sorted((SHARED / "fixtures" / "tokenizers").glob("*.gguf"))
    files += sorted((ROOT / "models").glob("*.gguf")) + sorted((ROOT / "tests/data/drafters").glob("*.gguf"))
    for path in files:
        mini = miniature(path)
        stem = path.stem
        write("gguf_file", f"{stem}.gguf", mini)
        write("gguf_file", f"{stem}.truncated.gguf", mini[: len(mini) * 2 // 3])
        rng = random.Random(stem)
        for k in range(2):
            flipped = bytearray(mini)
            for _ in range(4):
                flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
            write("gguf_file", f"{stem}.flip{k}.gguf", bytes(flipped))


def model_load_seeds():
    rng = random.Random(1)
    for i in range(64):
        write("model_load", f"edits{i:02d}", bytes(rng.randrange(256) for _ in range(rng.randrange(4, 48))))


def drafter_load_seeds():
    rng = random.Random(2)
    for i in range(48):
        # The last byte picks the base head (four of them), the rest the edits and the session.
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(4, 40)))
        write("drafter_load", f"edits{i:02d}", body + bytes([i % 4]))


def tokenizer_seeds():
    n_vocab_files = len(list((SHARED / "fixtures" / "tokenizers").glob("*.gguf"))) + 1
    texts = []
    for inp in sorted((SHARED / "fixtures" / "tokenizers").glob("*.inp")):
        texts += inp.read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    texts = sorted(set(t for t in texts if t))[:40]
    specials = ["<s>hi</s>", "<|im_start|>user\nx<|im_end|>", "<|endoftext|>", "<unk><0x0A>",
                "<|begin_of_text|><|eot_id|>", "\xff\xfe broken \xc3", "def f(x):\n    return x"]
    raw = [t.encode("utf-8", "surrogateescape") for t in texts]
    raw += [s.encode("latin-1") if "\xff" in s else s.encode() for s in specials]
    for v in range(n_vocab_files):
        for j, text in enumerate(raw):
            if (j + v) % 3:
                continue  # a third of the texts per vocabulary keeps the corpus small
            flags = (j % 8) & 7
            write("tokenizer", f"v{v:02d}-t{j:02d}", text + bytes([flags, v]))
        write("tokenizer", f"v{v:02d}-ids", bytes(range(0, 64)) + bytes([8, v]))


def fdp_string(text):
    """A string as FuzzedDataProvider.ConsumeRandomLengthString reads it: backslashes doubled,
    ended by a backslash and another byte."""
    return text.replace(b"\\", b"\\\\") + b"\\x"


def chat_template_seeds():
    contexts = []
    cases = SHARED / "chat-templates" / "cases.jsonl"
    for line in cases.read_text().splitlines()[:6]:
        case = json.loads(line)
        context = {k: v for k, v in case.items() if k not in ("template", "case", "expected")}
        contexts.append(json.dumps(context, ensure_ascii=False).encode())
    for path in sorted((SHARED / "chat-templates").glob("*.jinja")):
        for k, ctx in enumerate(contexts[:2] or [b"{}"]):
            write("chat_template", f"{path.stem}-{k}", fdp_string(path.read_bytes()) + ctx)
    small = [b"{{ messages[0]['content'] | upper }}", b"{% for m in messages %}{{ loop.index }}{% endfor %}",
             b"{% set ns = namespace(x=1) %}{{ ns.x }}", b"{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1) }}",
             b"{{ raise_exception('no') }}", b"{{ strftime_now('%Y') }}", b"{{ 'a,b'.split(',') | tojson }}"]
    for k, src in enumerate(small):
        write("chat_template", f"small-{k}", fdp_string(src) + b"not json")


def server_request_seeds():
    bodies = [
        {"model": "x", "messages": [{"role": "user", "content": "hi"}]},
        {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "a"}]}],
         "temperature": 0.5, "top_p": 0.9, "top_k": 10, "min_p": 0.1, "max_tokens": 16, "stream": True,
         "stream_options": {"include_usage": True}, "stop": ["\n", "END"], "seed": 7, "logprobs": True,
         "top_logprobs": 3, "frequency_penalty": 0.5, "presence_penalty": 0.2, "repeat_penalty": 1.1},
        {"messages": [{"role": "assistant", "content": None}], "n": 1, "ignore_eos": True},
    ]
    completions = [
        {"prompt": "def f(x):", "max_tokens": 8, "temperature": 0},
        {"prompt": [1, 2, 3], "echo": False, "stop": "x"},
        {"prompt": ["a"], "logprobs": 2},
    ]
    for k, body in enumerate(bodies):
        write("server_request", f"chat-{k}.json", b"\0" + json.dumps(body).encode())
    for k, body in enumerate(completions):
        write("server_request", f"completion-{k}.json", b"\1" + json.dumps(body).encode())


def cli_parser_seeds():
    write("cli_parsers", "ids", b"1,2, 3 4" + b"\0\0\x10" + b"\0")
    write("cli_parsers", "list", b"256,1024,4096" + b"\1")
    write("cli_parsers", "arms", b"ar,spec:model:4,spec:ngram:8:3,spec:layerskip:2:4,spec:auto:model+ngram:8" + b"\2")
    rng = random.Random(2)
    for k in range(8):
        write("cli_parsers", f"sampler{k}", bytes(rng.randrange(256) for _ in range(96)) + b"\3")


def main():
    gguf_seeds()
    model_load_seeds()
    drafter_load_seeds()
    tokenizer_seeds()
    chat_template_seeds()
    server_request_seeds()
    cli_parser_seeds()
    for d in sorted(OUT.iterdir()):
        files = list(d.iterdir())
        print(f"{d.name}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
