package reports

import (
	"fmt"
	"math"

	"github.com/montanaflynn/stats"

	"github.com/gradtune/gradtune/internal/results"
)

// Spread is the distribution of the valid medians of one shape.
type Spread struct {
	Shape *results.Shape
	// Min, Q1, Median, Q3, Max are in µs; IQR is Q3 − Q1.
	Min, Q1, Median, Q3, Max, IQR float64
	// Slow counts the variants above Q3 + 1.5 IQR (mild and extreme
	// outliers); Fast those below Q1 − 1.5 IQR.
	Slow, Fast int
}

// Fit is the least-squares line of the winners' time against the bytes
// they move: time = Intercept + bytes/BandwidthGBps.
type Fit struct {
	N int
	// InterceptUS is the fixed cost in µs, BandwidthGBps the inverse slope.
	InterceptUS, BandwidthGBps, R2 float64
}

// spread computes the quartiles and IQR outliers of a shape's medians; it
// reports false with fewer than four valid variants.
func spread(sh *results.Shape) (Spread, bool) {
	data := make(stats.Float64Data, 0, len(sh.Valid))
	for _, v := range sh.Valid {
		data = append(data, v.MedianUS)
	}
	if len(data) < 4 {
		return Spread{}, false
	}
	q, err := stats.Quartile(data)
	if err != nil {
		return Spread{}, false
	}
	out, err := stats.QuartileOutliers(data)
	if err != nil {
		return Spread{}, false
	}
	s := Spread{Shape: sh, Q1: q.Q1, Median: q.Q2, Q3: q.Q3, IQR: q.Q3 - q.Q1}
	s.Min, _ = stats.Min(data)
	s.Max, _ = stats.Max(data)
	for _, x := range append(append(stats.Float64Data{}, out.Mild...), out.Extreme...) {
		if x > q.Q3 {
			s.Slow++
		} else {
			s.Fast++
		}
	}
	return s, true
}

// fitTime fits the winners' medians against their bytes moved. It needs
// at least three winners of different sizes.
func fitTime(set *results.Set) (Fit, error) {
	var x, y stats.Float64Data
	for _, sh := range set.Shapes {
		if w := sh.Winner; w != nil && w.Bytes() > 0 {
			x = append(x, w.Bytes())
			y = append(y, w.MedianUS)
		}
	}
	if len(x) < 3 {
		return Fit{}, fmt.Errorf("%d winners with a known size, want at least 3", len(x))
	}
	vx, err := stats.SampleVariance(x)
	if err != nil || vx == 0 {
		return Fit{}, fmt.Errorf("the winners all move the same number of bytes")
	}
	cov, err := stats.Covariance(x, y)
	if err != nil {
		return Fit{}, err
	}
	r, err := stats.Correlation(x, y)
	if err != nil {
		return Fit{}, err
	}
	mx, _ := stats.Mean(x)
	my, _ := stats.Mean(y)
	slope := cov / vx // µs per byte
	f := Fit{N: len(x), InterceptUS: my - slope*mx, R2: r * r}
	if slope > 0 {
		f.BandwidthGBps = 1e-3 / slope
	} else {
		f.BandwidthGBps = math.Inf(1)
	}
	return f, nil
}
