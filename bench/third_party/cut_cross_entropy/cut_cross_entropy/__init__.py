# Copyright (C) 2024 Apple Inc. All Rights Reserved.
from cut_cross_entropy.cce_utils import LinearCrossEntropyImpl
from cut_cross_entropy.linear_cross_entropy import (
    LinearCrossEntropy,
    linear_cross_entropy,
)
from cut_cross_entropy.vocab_parallel import VocabParallelOptions

__all__ = [
    "LinearCrossEntropy",
    "LinearCrossEntropyImpl",
    "linear_cross_entropy",
    "VocabParallelOptions",
]


__version__ = "25.6.4"
