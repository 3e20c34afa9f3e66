package linxent

import (
	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/kernels"
)

// maxPasses is the passes over blocks of rows a program with tblock > 0
// makes: its launches do not depend on the shape's t (a runtime dim), so
// the last pass takes every row past the third block.
const maxPasses = 4

// A pass is the chunk loop over rows [r0, r0 + rows) (rows an expression
// of t, 0 where t does not reach r0).
type pass struct {
	r0   int
	rows configs.Expr
}

// passesOf is p's passes: one over every row with tblock 0, else
// maxPasses of tblock rows, the last taking the rest.
func passesOf(p Params) []pass {
	t := configs.Var(Dim)
	if p.TBlock == 0 {
		return []pass{{0, t}}
	}
	var out []pass
	for k := range maxPasses {
		r0 := k * p.TBlock
		rows := configs.Max(t.Minus(configs.Int(r0)), configs.Int(0))
		if k < maxPasses-1 {
			rows = configs.Min(configs.Int(p.TBlock), rows)
		}
		out = append(out, pass{r0, rows})
	}
	return out
}

// maxPassRows is the most rows a pass of p takes at run time: the rows
// of p (probabilities) a program needs.
func maxPassRows(p Params) configs.Expr {
	t := configs.Var(Dim)
	if p.TBlock == 0 {
		return t
	}
	return configs.Max(configs.Min(configs.Int(p.TBlock), t), t.Minus(configs.Int((maxPasses-1)*p.TBlock)))
}

// restrict makes the last of launches a launch of the pass: its dim the
// pass's rows, made only where the pass has rows (the first pass always).
func (ps pass) restrict(launches []kernels.Launch) {
	if ps.r0 == 0 && ps.rows.Equal(configs.Var(Dim)) {
		return
	}
	l := &launches[len(launches)-1]
	*l = l.Subst(Dim, ps.rows)
	if ps.r0 > 0 {
		l.When = &ps.rows
	}
}
