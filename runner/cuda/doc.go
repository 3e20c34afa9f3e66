// Package cuda is a small binding of the CUDA driver API, loaded at run time
// through purego. It needs neither cgo nor the CUDA toolkit to build: the
// binary builds anywhere (CGO_ENABLED=0 or 1) and needs only the NVIDIA
// driver (libcuda.so.1) where it runs. It knows nothing about kernels; the
// runner uses it to JIT PTX, inspect resources, move buffers, launch and time.
//
// # Loading and entry points
//
// [Open] dlopens libcuda.so.1 (RTLD_NOW|RTLD_GLOBAL) and looks up exactly
// three symbols by name: cuInit, cuDriverGetVersion and cuGetProcAddress_v2
// (so the driver must support CUDA 12.0 or newer). Every other entry point is
// resolved by its base name ("cuMemAlloc", "cuEventElapsedTime", ...) through
// cuGetProcAddress_v2 with CU_GET_PROC_ADDRESS_DEFAULT (the legacy
// default-stream variants), the way the CUDA runtime does it, and bound with
// purego. The package never names a _vN symbol itself, so CUDA 13's renames
// do not concern it.
//
// Like the runtime, which asks for the CUDA version it was built against, the
// package asks for the CUDA version whose signatures it declares: 12.0 for
// most entry points, 12.8 for cuEventElapsedTime (capped at the driver's
// version). The driver returns the ABI-compatible versioned function:
// cuMemAlloc_v2, cuDeviceGetUuid_v2, cuEventElapsedTime_v2 and so on. Asking
// with the driver's own version would return the newest ABI instead, whose
// signature can differ: on driver 580 (CUDA 13.0) "cuCtxSynchronize" then
// resolves to cuCtxSynchronize_v2, which takes a CUcontext argument.
//
// Open resolves everything once, caches the result (also a failure) for the
// life of the process, and never panics: without a driver it returns an error
// that wraps [ErrNoDriver] and carries the dlopen message.
//
// Every entry point is required except cuLaunchKernelEx and
// cuTensorMapEncodeTiled (ABI 12.0), which only launches with attributes and
// tensor maps use: a driver without them still opens, and
// [Driver.HasLaunchKernelEx] and [Driver.HasTensorMap] report false.
//
// # Contexts and threads
//
// A [Context] is the device's primary context (cuDevicePrimaryCtxRetain) made
// current on the calling OS thread (cuCtxSetCurrent). CUDA's current context
// is per OS thread while goroutines move between threads, so a caller must
// call runtime.LockOSThread before [Driver.Context] and keep the goroutine
// locked for as long as it uses the context and everything made from it
// (modules, functions, buffers, streams, events). The types here are not safe
// for concurrent use; one goroutine (thread) drives one context.
//
// # Streams
//
// A nil *[Stream] means the legacy default stream (handle 0) wherever a stream
// is taken. Streams made by [Context.NewStream] use default flags, so they
// synchronize with the legacy default stream.
//
// # Errors
//
// Every failing driver call returns an [*Error] carrying the operation, the
// CUresult code and the driver's name and description for it (from
// cuGetErrorName/cuGetErrorString, with a built-in table as fallback), for
// example "cuda: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
// [IsSticky] tells apart errors after which the context is corrupt
// (an illegal address, a failed launch, ...): the process must be restarted,
// which is why the runner does GPU work in a worker process.
//
// # Memory passed to the driver
//
// Go memory handed to the driver (copy sources and destinations, JIT log
// buffers, kernel argument storage, the CUlaunchConfig of a dependent launch
// and its attribute array, NUL-terminated names and PTX) is heap memory kept
// alive, and pinned with runtime.Pinner where the driver receives it inside
// another array or structure (or it holds such a pointer itself), for the
// duration of the call. The driver keeps no reference to any of it after the
// call returns: kernel arguments and launch configurations are copied at
// launch and synchronous copies finish before they return.
//
// # Kernel arguments
//
// [Context.Launch] takes kernel arguments as DevicePtr, uint64, int64, uint32,
// int32, float32, float64 or [TensorMap], each passed by value with its own
// width: scalars in 8-byte aligned slots, a TensorMap's 128 bytes 64-byte
// aligned (the .param is `.param .align 64 .b8 name[128]`). Any other type,
// Go's int included (its width is not a PTX type), is rejected with an error,
// so a mismatch between Go arguments and .param declarations is loud.
// [Context.LaunchDependent] and [Context.LaunchEx] take the same arguments.
//
// # Tensor maps
//
// [Driver.EncodeTensorMapTiled] calls cuTensorMapEncodeTiled for a
// [TensorMapSpec] (f16, bf16 or f32 elements, rank 1 to 5, byte strides of
// the outer dimensions, box extents, a swizzle of 0, 32, 64 or 128 bytes;
// element strides 1, no interleave, L2 promotion 128 B, out-of-bounds
// elements read as zero) into a 64-byte aligned [TensorMap]. It needs no
// context.
//
// # Dependent launches
//
// [Context.LaunchDependent] launches with programmatic stream serialization
// (programmatic dependent launch, sm_90): cuLaunchKernelEx with the
// attribute CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION allowed, so
// the kernel may start before the work queued ahead of it on the stream has
// finished; it must execute griddepcontrol.wait before touching memory that
// work uses. On a driver without cuLaunchKernelEx it queues nothing and
// returns an error wrapping [ErrNoLaunchKernelEx]; the caller may fall back
// to [Context.Launch].
//
// # Launches with attributes
//
// Launch, LaunchDependent and [Context.LaunchEx] share one path: a
// [LaunchConfig] without attributes goes to cuLaunchKernel, one with a
// cluster shape (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) or Dependent
// (programmatic stream serialization) to cuLaunchKernelEx with a short
// attribute array. A cluster divides the grid and has at most 16 blocks;
// above 8 (the portable limit) the function is first allowed non-portable
// cluster sizes (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED). Dynamic
// shared memory above 48 KiB needs [Function.SetMaxDynamicShared] before any
// launch, clustered or not.
//
// # cuBLAS and cuBLASLt
//
// [Context.OpenBLAS] and [Context.OpenBLASLt] load the vendor GEMM
// libraries that the runner's baselines time, through purego like the
// driver: libcublas.so and libcublasLt.so, versions 13, 12 and 11, by name
// (the loader's path), then from /usr/local/cuda/lib64 (not in the
// ldconfig cache on every GPU host) and $CUDA_HOME/lib64. Without them the
// error wraps [ErrNoBLAS] or [ErrNoBLASLt] and says what each candidate
// answered. [BLAS.GemmEx] is cublasGemmEx with the library's default
// algorithm. [BLASLt.Algorithms] asks cuBLASLt's heuristic for its best n
// algorithms of a [Gemm] (f32 compute and scale, at most
// [LtWorkspaceBytes] of workspace, which the handle allocates) and reads
// each one's configuration ([LtConfig]: algorithm id, tile, stages,
// split-K, reduction scheme, swizzle, custom option, inner and cluster
// shapes); [BLASLt.Matmul] runs one of them. The descriptors of a GEMM
// form (sizes, types, transposes and leading dimensions, not pointers) are
// made once and kept with the handle, so a timed Matmul is one
// cublasLtMatmul call. go test ./runner/cuda -run TestLtOnGPU -v checks
// the binding on a GPU.
package cuda
