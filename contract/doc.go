// Package contract is the launch contract of gradtune's programs: what a
// program needs to be launched, described completely, so that the tuner,
// the nightly gate and a trainer that embeds a tuned table launch it the
// same way. Kernel families emit it (package kernels uses these types),
// tuned tables carry it as JSON (package configs), and package launch runs
// it.
//
// A program is PTX, its buffers and its launches:
//   - a Buffer has a name, a dtype, an element count and a Role: input,
//     output, accumulate (zeroed before every run), inout (filled by the caller,
//     overwritten with the result), scratch (workspace) or
//     state (zeroed once; every run leaves it zero);
//   - a Launch names its entry and gives its grid, block, cluster, dynamic
//     shared memory (with the opt-in above 48 KiB), whether it is a
//     programmatic dependent launch, and its parameters in order;
//   - an Arg is a buffer's address plus a byte offset, a scalar of a PTX
//     type (u32 or u64), or a TMA tensor map of a buffer with every field
//     of cuTensorMapEncodeTiled (element type, rank, dims and byte
//     strides, box, element strides, interleave, swizzle, L2 promotion and
//     out-of-bounds fill) and its Offset: the bytes from the buffer's
//     start to the tensor's element (0, …, 0), at least 0 and a multiple
//     of 16. The map is encoded over the buffer's address plus the offset
//     (TensorMapSpec.Global), so a sub-tensor — rows j·C to j·C+C−1 of a
//     weight [V×H] — is a map of its own; in JSON the key "offset" (an
//     expression) is written only when the offset is not 0, and a missing
//     one reads as 0.
//
// Sizes are expressions (Expr) of the shape's dims — m, n, k, ... — and of
// "sms", the device's multiprocessor count: a program whose PTX takes a
// dim as a launch argument is launched at any value of that dim by
// evaluating its expressions there. Resolve evaluates a program at one
// shape into a Plan of plain numbers and checks everything that needs no
// device: buffer names and roles, block and cluster sizes, grids that are
// whole clusters, arguments that name known buffers, offsets and tensors
// inside their buffers (a tensor map from its offset to its last byte),
// tensor maps the driver accepts, scalars that fit.
//
// The package imports the standard library and package dtype only, so
// that trainers can embed it.
package contract
