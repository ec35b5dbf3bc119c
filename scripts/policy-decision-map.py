#!/usr/bin/python3
"""Summarises `--policy-log` files (one JSON line per cycle) as the decision maps of docs/policy.md:
per log, the share of cycles and of time each choice took (source, or AR), the blocks it drafted,
and how well the policy predicted tokens and seconds per cycle.

Usage: policy-decision-map.py build/policy-logs/*.jsonl   (Python 3 standard library only)
"""
import collections
import json
import os
import sys


def summarise(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    total_s = sum(r['actual_s'] for r in rows) or 1.0
    by = collections.defaultdict(lambda: {'cycles': 0, 's': 0.0, 'drafted': 0, 'kept': 0,
                                          'explore': 0})
    for r in rows:
        b = by[r['source']]
        b['cycles'] += 1
        b['s'] += r['actual_s']
        b['drafted'] += r['drafted']
        b['kept'] += r['accepted']
        b['explore'] += 1 if r['explore'] else 0
    choices = []
    for source, b in sorted(by.items(), key=lambda kv: -kv[1]['s']):
        mean_k = b['drafted'] / b['cycles']
        kept = f", keeps {b['kept'] / b['drafted']:.0%}" if b['drafted'] else ''
        choices.append(f"{source} {b['s'] / total_s:.0%} of time ({b['cycles']} cycles, "
                       f"{b['explore']} exploring, mean k {mean_k:.1f}{kept})")
    pred_tok = sum(r['predicted_accepted'] + 1 for r in rows) / len(rows)
    obs_tok = sum(r['accepted'] + 1 for r in rows) / len(rows)
    pred_s = sum(r['predicted_s'] for r in rows) / len(rows)
    obs_s = sum(r['actual_s'] for r in rows) / len(rows)
    name = os.path.basename(path).removesuffix('.jsonl')
    return (f"| {name} | {'; '.join(choices)} | {pred_tok:.2f} / {obs_tok:.2f} | "
            f"{1e3 * pred_s:.2f} / {1e3 * obs_s:.2f} |")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print('| run | where the time went | tokens/cycle predicted / observed | '
          'ms/cycle predicted / observed |')
    print('| --- | --- | --- | --- |')
    for path in sys.argv[1:]:
        print(summarise(path))


if __name__ == '__main__':
    main()
