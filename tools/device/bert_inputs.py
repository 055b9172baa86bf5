#!/usr/bin/env python3
"""BERT-base's inputs for the device scripts (ab_probe.sh, ab_binary.sh,
tf32x3_check.sh, tf32x3_peers.sh, precision_check.sh): token ids in range
(seed 0, the same for every batch) and an all-ones attention mask, sequence
128, written as DIR/bert_ids_N.npy and DIR/bert_mask_N.npy.

    python3 tools/device/bert_inputs.py DIR [--batches 1,64]
"""
import argparse

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir")
    p.add_argument("--batches", default="1,64")
    a = p.parse_args()
    for n in (int(b) for b in a.batches.split(",")):
        rng = np.random.default_rng(0)
        np.save(f"{a.dir}/bert_ids_{n}.npy", rng.integers(0, 30522, (n, 128), dtype=np.int64))
        np.save(f"{a.dir}/bert_mask_{n}.npy", np.ones((n, 128), dtype=np.int64))


if __name__ == "__main__":
    main()
