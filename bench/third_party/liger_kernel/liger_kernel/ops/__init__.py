# Not Liger-Kernel's file: a stub written for gradtune's bench/peers_step.py.
#
# Upstream's src/liger_kernel/ops/__init__.py imports every op module (about
# forty, most of them not carried here) and then runs a backend dispatch
# (_discover_impls / _replace_with_impl_ops over ops/backends, cutile,
# cutedsl) that can replace the exported names. This stub imports nothing, so
# `import liger_kernel.ops.<module>` loads only that module and its own
# imports, and every name is the default Triton implementation, as upstream
# says for imports from the submodules themselves ("Import from submodules
# (liger_kernel.ops.geglu) -> always use default implementation").
