#!/usr/bin/python3
"""The reference side of bench:engine: the same TorchScript files through python3-torch.

Prints one JSON object per line: {"model", "batch", "per_s", "iters", "seconds"}.
Usage: engine_python.py --models DIR --rows mlp:1,mlp:8,... --threads N --seconds S [--device cuda:0]
"""
import argparse
import json
import os
import time

import torch

SHAPES = {"mlp": (1024,), "resnet50": (3, 224, 224)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", required=True)
    p.add_argument("--rows", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--min-iters", type=int, default=3)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    loaded = {}
    with torch.inference_mode():
        for row in a.rows.split(","):
            name, batch = row.split(":")
            batch = int(batch)
            if name not in loaded:
                loaded[name] = torch.jit.load(os.path.join(a.models, name + ".pt"), map_location=a.device).eval()
            model = loaded[name]
            g = torch.Generator().manual_seed(batch)
            x = torch.rand((batch,) + SHAPES[name], generator=g) * 2 - 1

            def step():
                # Host tensors in, host tensors out, as the addon's callers get them.
                return model(x.to(a.device)).cpu()

            for _ in range(a.warmup):
                step()
            iters = 0
            start = time.perf_counter()
            while True:
                step()
                iters += 1
                elapsed = time.perf_counter() - start
                if iters >= a.min_iters and elapsed >= a.seconds:
                    break
            print(json.dumps({"model": name, "batch": batch, "per_s": batch * iters / elapsed,
                              "iters": iters, "seconds": elapsed}), flush=True)


if __name__ == "__main__":
    main()
