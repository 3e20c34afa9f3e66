package lora

// Plant sets a bug emission plants (see planted) until the returned
// function restores it: "dropStep", "dropLo", "keepDA", or
// "clusterEarly" or "clusterDrop" followed by the output ("db", "da").
func Plant(bug string) (restore func()) {
	old := planted
	switch bug {
	case "dropStep":
		planted.dropStep = true
	case "dropLo":
		planted.dropLo = true
	case "keepDA":
		planted.keepDA = true
	case "clusterEarly db", "clusterEarly da":
		planted.clusterEarly = bug[len("clusterEarly "):]
	case "clusterDrop db", "clusterDrop da":
		planted.clusterDrop = bug[len("clusterDrop "):]
	default:
		panic("no planted bug " + bug)
	}
	return func() { planted = old }
}
