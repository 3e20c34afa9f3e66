package linxent

// The reference's two products over a block of rows in float64, four
// rows and two classes at a time: every
// element of w loaded serves four rows, and every element of x (or of a
// row of dx) two classes. Each logit is one running sum over h in order;
// each element of dx takes the classes in order, two a step.

// logitsOf sets z[i·v + c] = x[r0+i]·w[c] for the n rows from r0.
func logitsOf(x, w, z []float64, h, v, r0, n int) {
	row := func(i int) []float64 { return x[(r0+i)*h : (r0+i+1)*h] }
	class := func(c int) []float64 { return w[c*h : (c+1)*h] }
	for c := 0; c < v; c += 2 {
		w0, w1 := class(c), class(min(c+1, v-1)) // an odd v's last class twice
		i := 0
		for ; i+4 <= n; i += 4 {
			s := dots4x2(row(i), row(i+1), row(i+2), row(i+3), w0, w1)
			for k := range 4 {
				z[(i+k)*v+c] = s[2*k]
				if c+1 < v {
					z[(i+k)*v+c+1] = s[2*k+1]
				}
			}
		}
		for ; i < n; i++ {
			s := dots4x2(row(i), row(i), row(i), row(i), w0, w1)
			z[i*v+c] = s[0]
			if c+1 < v {
				z[i*v+c+1] = s[1]
			}
		}
	}
}

// dots4x2 is (x0·w0, x0·w1, x1·w0, …, x3·w1).
func dots4x2(x0, x1, x2, x3, w0, w1 []float64) [8]float64 {
	n := len(w0)
	x0, x1, x2, x3, w1 = x0[:n], x1[:n], x2[:n], x3[:n], w1[:n]
	var s00, s01, s10, s11, s20, s21, s30, s31 float64
	for k, a := range w0 {
		b := w1[k]
		s00, s01 = s00+x0[k]*a, s01+x0[k]*b
		s10, s11 = s10+x1[k]*a, s11+x1[k]*b
		s20, s21 = s20+x2[k]*a, s21+x2[k]*b
		s30, s31 = s30+x3[k]*a, s31+x3[k]*b
	}
	return [8]float64{s00, s01, s10, s11, s20, s21, s30, s31}
}

// addGrads adds Σ_c coef[i·v + c]·w[c] to dx's row r0+i for the n rows
// from r0, classes in order.
func addGrads(dx, w, coef []float64, h, v, r0, n int) {
	row := func(i int) []float64 { return dx[(r0+i)*h : (r0+i+1)*h] }
	class := func(c int) []float64 { return w[c*h : (c+1)*h] }
	k := func(i, c int) float64 {
		if c >= v {
			return 0
		}
		return coef[i*v+c]
	}
	for c := 0; c < v; c += 2 {
		w0, w1 := class(c), class(min(c+1, v-1))
		i := 0
		for ; i+4 <= n; i += 4 {
			axpys4x2(row(i), row(i+1), row(i+2), row(i+3), w0, w1,
				[8]float64{k(i, c), k(i, c+1), k(i+1, c), k(i+1, c+1), k(i+2, c), k(i+2, c+1), k(i+3, c), k(i+3, c+1)})
		}
		for ; i < n; i++ {
			d := row(i)
			for j, a := range w0 {
				d[j] += k(i, c)*a + k(i, c+1)*w1[j]
			}
		}
	}
}

// axpys4x2 adds k[2i]·w0 + k[2i+1]·w1 to d_i, w0's term first.
func axpys4x2(d0, d1, d2, d3, w0, w1 []float64, k [8]float64) {
	n := len(w0)
	d0, d1, d2, d3, w1 = d0[:n], d1[:n], d2[:n], d3[:n], w1[:n]
	for j, a := range w0 {
		b := w1[j]
		d0[j] += k[0]*a + k[1]*b
		d1[j] += k[2]*a + k[3]*b
		d2[j] += k[4]*a + k[5]*b
		d3[j] += k[6]*a + k[7]*b
	}
}
