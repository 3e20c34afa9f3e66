"""gradtune for Python: read gradtune's tuned config tables, choose an entry
by the Go implementation's rules, and launch its PTX through the CUDA
driver on PyTorch tensors.

Modules (all standard library but gradtune.torch):
  gradtune.expr      the contract's integer expressions
  gradtune.contract  buffers, launches, arguments, resolve() into a Plan
  gradtune.table     tables: parse, check, lookup, hint, PTX files
  gradtune.driver    the CUDA driver through ctypes, behind a seam
  gradtune.launch    bind a plan to device addresses and launch it in order
  gradtune.torch     run entries on torch tensors; autograd Functions whose
                     backward runs the tuned kernels (imports torch lazily)
  gradtune.selftest  the GPU self-test: python3 -m gradtune.selftest configs/h200
"""

from .errors import (BadProgram, DecodeError, GradtuneError, Malformed, NoConfig, NoEntry, NoPTX, NotLaunchable,
                     SchemaTooNew, SchemaTooOld, TableError, UnknownGPU, UnknownKernel)

__version__ = "0.1.0"
