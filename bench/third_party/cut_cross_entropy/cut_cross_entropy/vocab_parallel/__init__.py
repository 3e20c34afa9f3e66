# Copyright (C) 2024 Apple Inc. All Rights Reserved.
from cut_cross_entropy.vocab_parallel.utils import VocabParallelOptions
from cut_cross_entropy.vocab_parallel.vocab_parallel_torch_compile import (
    vocab_parallel_torch_compile_lce_apply,
)

__all__ = ["VocabParallelOptions", "vocab_parallel_torch_compile_lce_apply"]
