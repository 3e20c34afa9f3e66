package gemm

import "github.com/gradtune/gradtune/kernels"

// EmitUnchecked emits p at s without the space's rules: the stream-K
// interpreter test runs grids and shapes smaller than the rules admit.
func EmitUnchecked(s Shape, p Params) (kernels.Program, error) { return def{}.Emit(s, p) }

// Plant sets the bugs emission plants (see planted) until the returned
// function restores them: "flagFirst", "keepState", "dropSplit".
func Plant(bug string) (restore func()) {
	old := planted
	switch bug {
	case "flagFirst":
		planted.flagFirst = true
	case "keepState":
		planted.keepState = true
	case "dropSplit":
		planted.dropSplit = true
	default:
		panic("no planted bug " + bug)
	}
	return func() { planted = old }
}
