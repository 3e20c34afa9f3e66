package variants

// Filter keeps the points whose values agree with fix on every axis fix
// names (all of them for an empty fix).
func Filter(points []Params, fix Params) []Params {
	if len(fix) == 0 {
		return points
	}
	var out []Params
	for _, p := range points {
		if p.Agrees(fix) {
			out = append(out, p)
		}
	}
	return out
}

// Agrees reports whether p has fix's value on every axis fix names.
func (p Params) Agrees(fix Params) bool {
	for k, v := range fix {
		if p[k] != v {
			return false
		}
	}
	return true
}

// Spread returns at most n points spread evenly over points, in their
// order (all of them for n ≤ 0 or n ≥ len(points)).
func Spread(points []Params, n int) []Params {
	if n <= 0 || n >= len(points) {
		return points
	}
	out := make([]Params, n)
	for i := range out {
		out[i] = points[i*len(points)/n]
	}
	return out
}
