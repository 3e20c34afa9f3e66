package lora

// Plant sets a bug emission plants (see planted) until the returned
// function restores it: "dropStep", "dropLo", "keepDA", "drawEarly" or
// "dropBlock".
func Plant(bug string) (restore func()) {
	old := planted
	switch bug {
	case "dropStep":
		planted.dropStep = true
	case "dropLo":
		planted.dropLo = true
	case "keepDA":
		planted.keepDA = true
	case "drawEarly":
		planted.drawEarly = true
	case "dropBlock":
		planted.dropBlock = true
	default:
		panic("no planted bug " + bug)
	}
	return func() { planted = old }
}
