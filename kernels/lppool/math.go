package lppool

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// powMath emits the family's arithmetic in the math type of a dtype (f32,
// or f64 for f64).
type powMath struct {
	k   *ptx.Func
	g   geom
	dt  dtype.DType
	mt  ptx.Type
	pow Pow
}

func newPowMath(k *ptx.Func, g geom, dt dtype.DType, pow Pow) *powMath {
	mt := ptx.F32
	if dt == dtype.F64 {
		mt = ptx.F64
	}
	if ip, isInt := g.intP(); isInt && ip == 1 {
		pow = PowMul // no power at all
	}
	return &powMath{k: k, g: g, dt: dt, mt: mt, pow: pow}
}

func (e *powMath) imm(v float64) ptx.Operand {
	if e.mt == ptx.F64 {
		return ptx.F64Imm(v)
	}
	return ptx.F32Imm(float32(v))
}

// ipow returns a^n (n ≥ 1) by repeated squaring.
func (e *powMath) ipow(a ptx.Reg, n int) ptx.Reg {
	var out ptx.Reg
	sq := a
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			if out.Valid() {
				out = e.k.Mul(e.mt, out, sq)
			} else {
				out = sq
			}
		}
		if n > 1 {
			sq = e.k.Mul(e.mt, sq, sq)
		}
	}
	return out
}

// win is one window prepared for the sums over its elements: the mul
// form's factor g = dy·k/c·y^(1−p), or the exp2 form's gd = dy·k/c and
// ly = (p−1)·log2 y. Windows with y = 0 (including slots that are no
// window, whose dy and y load as 0) get g = gd = 0.
type win struct{ g, ly ptx.Reg }

// windows prepares the windows of one unit from their dy and y: slot d is
// the clipped last window where q == lastQ[d] (never where lastQ[d] < 0).
func (e *powMath) windows(dys, ys []ptx.Reg, q ptx.Reg, lastQ []int) []win {
	k := e.k
	ws := make([]win, len(dys))
	for d := range ws {
		var last ptx.Reg
		if lastQ[d] >= 0 {
			last = k.Setp("eq", ptx.U32, q, ptx.Imm(lastQ[d]))
		}
		ws[d] = e.window(dys[d], ys[d], last)
	}
	return ws
}

// window prepares a window from dy and y; last, when valid, says it is the
// clipped last window.
func (e *powMath) window(dy, y, last ptx.Reg) win {
	k, mt := e.k, e.mt
	yz := k.Setp("eq", mt, y, e.imm(0))
	dys := dy
	if last.Valid() {
		dys = k.Selp(mt, k.Mul(mt, dy, e.imm(float64(e.g.k)/float64(e.g.lastC))), dy, last)
	}
	ip, _ := e.g.intP()
	if e.pow == PowMul {
		if ip > 1 {
			yp := e.ipow(y, ip-1)
			var inv ptx.Reg
			if mt == ptx.F64 {
				inv = k.Rcp(ptx.F64, yp)
			} else {
				inv = k.RcpApprox(yp)
			}
			dys = k.Mul(mt, dys, inv)
		}
		return win{g: k.Selp(mt, e.imm(0), dys, yz)}
	}
	y1 := k.Selp(mt, e.imm(1), y, yz)
	return win{g: k.Selp(mt, e.imm(0), dys, yz), ly: k.Mul(mt, k.Lg2Approx(y1), e.imm(e.g.p-1))}
}

// element returns dx of an element x covered by the windows ws.
func (e *powMath) element(x ptx.Reg, ws []win) ptx.Reg {
	k, mt := e.k, e.mt
	if len(ws) == 0 {
		return k.Mov(mt, e.imm(0))
	}
	ip, _ := e.g.intP()
	var acc ptx.Reg
	if e.pow == PowMul {
		acc = ws[0].g
		for _, w := range ws[1:] {
			acc = k.Add(mt, acc, w.g)
		}
		switch {
		case ip == 2:
			return k.Mul(mt, x, acc)
		case ip > 2:
			return k.Mul(mt, k.Mul(mt, x, e.ipow(k.Abs(mt, x), ip-2)), acc)
		}
		// p = 1: sgn(x)·acc.
	} else {
		lx := k.Mul(mt, k.Lg2Approx(k.Abs(mt, x)), e.imm(e.g.p-1))
		for i, w := range ws {
			t := k.Ex2Approx(k.Sub(mt, lx, w.ly))
			if i == 0 {
				acc = k.Mul(mt, w.g, t)
			} else {
				acc = k.Fma(mt, w.g, t, acc)
			}
		}
	}
	neg := k.Setp("lt", mt, x, e.imm(0))
	out := k.Selp(mt, k.Neg(mt, acc), acc, neg)
	if e.g.pm <= 1000 {
		// sgn(0) = 0, and for p < 1 the power of 0 is infinite.
		out = k.Selp(mt, e.imm(0), out, k.Setp("eq", mt, x, e.imm(0)))
	}
	return out
}
