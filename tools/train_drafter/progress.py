"""A one-line tqdm-like progress display (no dependency)."""
import sys, time


class Progress:
    def __init__(self, total_s, label="train"):
        self.total_s, self.label, self.t0 = total_s, label, time.time()

    def update(self, elapsed, step, **kv):
        frac = min(1.0, elapsed / self.total_s) if self.total_s else 0.0
        bar = "#" * int(frac * 24) + "-" * (24 - int(frac * 24))
        items = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in kv.items())
        sys.stderr.write(f"\r{self.label} |{bar}| {frac * 100:5.1f}% step {step} {elapsed / 60:.1f}/"
                         f"{self.total_s / 60:.1f} min {items}   ")
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")
