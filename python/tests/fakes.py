"""A driver.Driver that records what it is asked to do."""

import struct

from gradtune import driver


class FakeDriver(driver.Driver):
    """Records every call; with no_pdl set, dependent launches raise
    NoDependentLaunch (and are not recorded)."""

    def __init__(self, no_pdl=False):
        self.no_pdl = no_pdl
        self.calls = []
        self.launches = []

    def load_module(self, ptx):
        self.calls.append(("load_module", len(ptx)))
        return "module"

    def get_function(self, module, name):
        self.calls.append(("get_function", module, name))
        return "fn:" + name

    def set_max_dynamic_shared(self, function, nbytes):
        self.calls.append(("set_max_dynamic_shared", function, nbytes))

    def allow_non_portable_cluster(self, function):
        self.calls.append(("allow_non_portable_cluster", function))

    def prefer_max_shared(self, function):
        self.calls.append(("prefer_max_shared", function))

    def encode_tensor_map(self, spec, base):
        self.calls.append(("encode_tensor_map", spec.buffer, base))
        # A recognisable map: the base, then rank and dims.
        data = struct.pack("<QI", base, len(spec.dims)) + struct.pack("<%dQ" % len(spec.dims), *spec.dims)
        return data.ljust(driver.TENSOR_MAP_BYTES, b"\xee")

    def launch(self, function, spec, stream, packed):
        if spec.dependent and self.no_pdl:
            raise driver.NoDependentLaunch("fake: no dependent launches")
        self.launches.append((function, spec.entry, list(spec.grid), list(spec.block), list(spec.cluster), spec.shared_bytes,
                              spec.dependent, stream, packed.data, list(packed.offsets)))
