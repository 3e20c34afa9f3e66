package runner

// OpenCUDA opens GPU ordinal as a Backend in this process, without a
// worker process: for tools that compare backends (tune crosscheck), not
// for tuning, where a sticky CUDA error must not kill the parent. The CUDA
// context is current on the calling OS thread only: the caller must call
// runtime.LockOSThread first and use the backend, and call the returned
// close function, from that goroutine.
func OpenCUDA(ordinal int) (Backend, func(), error) {
	b, err := openCUDA(ordinal)
	if err != nil {
		return nil, nil, err
	}
	return b, b.close, nil
}
