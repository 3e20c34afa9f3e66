// Package launch runs a program of the launch contract (package configs)
// on a device: it binds a resolved plan's arguments to device buffers —
// buffer addresses plus offsets, tensor maps encoded over them, scalars of
// their PTX type — and makes the launches in order, each with its grid,
// block, cluster, dynamic shared memory and programmatic-dependent-launch
// attribute.
//
// The binding and the launch order are written once, against the Device
// interface: the tuner's worker implements Device over its backends (the
// CUDA driver and the CPU interpreter), and CUDA implements it over the
// driver alone (package runner/cuda, through purego: no cgo), for trainers
// that embed the tuned tables. A table entry the harness timed is thus
// launched by a trainer through the same code.
//
// Rules:
//   - A dependent launch goes to the device as dependent; a device that
//     cannot launch dependently launches it in plain stream order, which
//     is what the kernel's griddepcontrol.wait waits for anyway.
//   - A function whose launch needs more than 48 KiB of dynamic shared
//     memory is opted in to that amount when it is loaded.
//   - Tensor maps are encoded once, at Bind; the buffers must not move
//     while the bound program is in use.
//   - A tensor map is encoded over its buffer's address plus its offset
//     (configs.TensorMapSpec.Global): the Device gets the address of the
//     tensor's element (0, …, 0), after the check that the buffer's
//     address is 16-byte aligned and the tensor, from its offset to its
//     last byte, lies inside the buffer.
package launch
