package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// Context is a device's primary context, current on the OS thread that made
// it. See the package documentation for the threading rules.
type Context struct {
	d       *Driver
	ordinal int
	dev     int32
	h       uintptr // CUcontext
}

// Context retains the primary context of the device with the given ordinal
// (cuDevicePrimaryCtxRetain) and makes it current on the calling OS thread
// (cuCtxSetCurrent).
//
// CUDA's current context belongs to the OS thread, not the goroutine: the
// caller must call runtime.LockOSThread before Context and stay locked until
// it is done with the context and everything made from it, including Close.
func (d *Driver) Context(ordinal int) (*Context, error) {
	dev, err := d.device(ordinal)
	if err != nil {
		return nil, err
	}
	var h uintptr
	if err := d.check("cuDevicePrimaryCtxRetain", d.api.cuDevicePrimaryCtxRetain(&h, dev)); err != nil {
		return nil, err
	}
	if err := d.check("cuCtxSetCurrent", d.api.cuCtxSetCurrent(h)); err != nil {
		_ = d.api.cuDevicePrimaryCtxRelease(dev)
		return nil, err
	}
	return &Context{d: d, ordinal: ordinal, dev: dev, h: h}, nil
}

// Driver returns the driver the context belongs to.
func (c *Context) Driver() *Driver { return c.d }

// Ordinal returns the ordinal of the context's device.
func (c *Context) Ordinal() int { return c.ordinal }

// Close releases the primary context (cuDevicePrimaryCtxRelease). The driver
// destroys it, and frees everything allocated in it, when the last retain is
// released. Closing twice is a no-op.
func (c *Context) Close() error {
	if c.h == 0 {
		return nil
	}
	_ = c.d.api.cuCtxSetCurrent(0)
	c.h = 0
	return c.d.check("cuDevicePrimaryCtxRelease", c.d.api.cuDevicePrimaryCtxRelease(c.dev))
}

// Synchronize waits for all work in the context (cuCtxSynchronize). It
// returns errors of earlier asynchronous work, such as a failed launch.
func (c *Context) Synchronize() error {
	return c.d.check("cuCtxSynchronize", c.d.api.cuCtxSynchronize())
}

// MemInfo returns the free and total device memory in bytes (cuMemGetInfo).
func (c *Context) MemInfo() (free, total uint64, err error) {
	var f, t uintptr
	if err := c.d.check("cuMemGetInfo", c.d.api.cuMemGetInfo(&f, &t)); err != nil {
		return 0, 0, err
	}
	return uint64(f), uint64(t), nil
}

// DevicePtr is a device memory address (CUdeviceptr).
type DevicePtr uint64

// Alloc allocates bytes of device memory (cuMemAlloc). Device allocations are
// aligned to at least 256 bytes.
func (c *Context) Alloc(bytes int) (DevicePtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cuda: Alloc: size %d bytes, want > 0", bytes)
	}
	var p uint64
	if err := c.d.check("cuMemAlloc", c.d.api.cuMemAlloc(&p, uintptr(bytes))); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

// Free frees device memory from Alloc (cuMemFree). Freeing 0 is a no-op.
func (c *Context) Free(p DevicePtr) error {
	if p == 0 {
		return nil
	}
	return c.d.check("cuMemFree", c.d.api.cuMemFree(uint64(p)))
}

// CopyHtoD copies src to device memory at dst (cuMemcpyHtoD). It returns once
// src has been read.
func (c *Context) CopyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return c.d.check("cuMemcpyHtoD", c.d.api.cuMemcpyHtoD(uint64(dst), unsafe.Pointer(&src[0]), uintptr(len(src))))
}

// CopyDtoH copies len(dst) bytes of device memory at src into dst
// (cuMemcpyDtoH). It waits for earlier work on the default stream.
func (c *Context) CopyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return c.d.check("cuMemcpyDtoH", c.d.api.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), uint64(src), uintptr(len(dst))))
}

// CopyDtoDAsync enqueues a copy of bytes of device memory from src to dst on
// s (nil: the default stream) (cuMemcpyDtoDAsync).
func (c *Context) CopyDtoDAsync(dst, src DevicePtr, bytes int, s *Stream) error {
	if bytes < 0 {
		return fmt.Errorf("cuda: CopyDtoDAsync: negative size %d", bytes)
	}
	return c.d.check("cuMemcpyDtoDAsync", c.d.api.cuMemcpyDtoDAsync(uint64(dst), uint64(src), uintptr(bytes), s.handle()))
}

// MemsetD8Async enqueues setting bytes bytes at p to v on s (nil: the default
// stream) (cuMemsetD8Async).
func (c *Context) MemsetD8Async(p DevicePtr, v byte, bytes int, s *Stream) error {
	if bytes < 0 {
		return fmt.Errorf("cuda: MemsetD8Async: negative size %d", bytes)
	}
	return c.d.check("cuMemsetD8Async", c.d.api.cuMemsetD8Async(uint64(p), v, uintptr(bytes), s.handle()))
}

// MemsetD32Async enqueues setting words 32-bit words at p (4-byte aligned)
// to v on s (nil: the default stream) (cuMemsetD32Async).
func (c *Context) MemsetD32Async(p DevicePtr, v uint32, words int, s *Stream) error {
	if words < 0 {
		return fmt.Errorf("cuda: MemsetD32Async: negative count %d", words)
	}
	return c.d.check("cuMemsetD32Async", c.d.api.cuMemsetD32Async(uint64(p), v, uintptr(words), s.handle()))
}

// Stream is a CUDA stream. A nil *Stream is the legacy default stream.
type Stream struct {
	d *Driver
	h uintptr // CUstream
}

// NewStream creates a stream with default flags (cuStreamCreate).
func (c *Context) NewStream() (*Stream, error) {
	var h uintptr
	if err := c.d.check("cuStreamCreate", c.d.api.cuStreamCreate(&h, streamDefaultFlags)); err != nil {
		return nil, err
	}
	return &Stream{d: c.d, h: h}, nil
}

// handle returns the CUstream, 0 for the nil (default) stream.
func (s *Stream) handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// Synchronize waits for the work queued on s (cuStreamSynchronize). On a nil
// Stream it is an error: use Context.Synchronize for the default stream.
func (s *Stream) Synchronize() error {
	if s == nil {
		return errNilStream
	}
	return s.d.check("cuStreamSynchronize", s.d.api.cuStreamSynchronize(s.h))
}

// Destroy destroys the stream (cuStreamDestroy); work already queued still
// completes. Destroying a nil or destroyed stream is a no-op.
func (s *Stream) Destroy() error {
	if s == nil || s.h == 0 {
		return nil
	}
	h := s.h
	s.h = 0
	return s.d.check("cuStreamDestroy", s.d.api.cuStreamDestroy(h))
}

var errNilStream = errors.New("cuda: Synchronize on the nil (default) stream; use Context.Synchronize")

// Event is a CUDA event with timing enabled.
type Event struct {
	d *Driver
	h uintptr // CUevent
}

// NewEvent creates an event with default flags, which enable timing
// (cuEventCreate).
func (c *Context) NewEvent() (*Event, error) {
	var h uintptr
	if err := c.d.check("cuEventCreate", c.d.api.cuEventCreate(&h, eventDefaultFlags)); err != nil {
		return nil, err
	}
	return &Event{d: c.d, h: h}, nil
}

// Record records the event on s (nil: the default stream) (cuEventRecord).
func (e *Event) Record(s *Stream) error {
	return e.d.check("cuEventRecord", e.d.api.cuEventRecord(e.h, s.handle()))
}

// Synchronize waits until the event has completed (cuEventSynchronize).
func (e *Event) Synchronize() error {
	return e.d.check("cuEventSynchronize", e.d.api.cuEventSynchronize(e.h))
}

// Destroy destroys the event (cuEventDestroy). Destroying a nil or destroyed
// event is a no-op.
func (e *Event) Destroy() error {
	if e == nil || e.h == 0 {
		return nil
	}
	h := e.h
	e.h = 0
	return e.d.check("cuEventDestroy", e.d.api.cuEventDestroy(h))
}

// Elapsed returns the time in milliseconds between two recorded, completed
// events (cuEventElapsedTime, resolved to cuEventElapsedTime_v2 on CUDA 13).
// The driver's resolution is about half a microsecond.
func Elapsed(start, end *Event) (ms float32, err error) {
	if start == nil || end == nil {
		return 0, errors.New("cuda: Elapsed: nil event")
	}
	if err := start.d.check("cuEventElapsedTime", start.d.api.cuEventElapsedTime(&ms, start.h, end.h)); err != nil {
		return 0, err
	}
	return ms, nil
}
