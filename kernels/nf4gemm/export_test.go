package nf4gemm

// PlantScaleBlock makes the kernels emitted until the returned function
// runs read block b+1's scale for block b (see plantedBlock).
func PlantScaleBlock(b int) (restore func()) {
	old := plantedBlock
	plantedBlock = b
	return func() { plantedBlock = old }
}

// PlantDropPartial makes the register-A kernels emitted until the
// returned function runs leave their last split's partial sums
// unstored (see plantedDropPartial).
func PlantDropPartial() (restore func()) {
	old := plantedDropPartial
	plantedDropPartial = true
	return func() { plantedDropPartial = old }
}
