package configs

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestExprEval(t *testing.T) {
	env := Env{"m": 2049, "n": 1536, "sms": 132}
	for _, c := range []struct {
		text string
		want int64
	}{
		{"7", 7},
		{"m*n", 2049 * 1536},
		{"cdiv(m, 128)", 17},
		{"div(m, 128)", 16},
		{"min(sms*2, cdiv(m*n, 1024))", 264},
		{"max(1, m - 4096)", 1},
		{"(m + 1)*2", 4100},
		{"m - (n - 1)", 2049 - 1535},
		{"m - n - 1", 2049 - 1537},
		{"-3 + m", 2046},
	} {
		e, err := ParseExpr(c.text)
		if err != nil {
			t.Errorf("%s: %v", c.text, err)
			continue
		}
		got, err := e.Eval(env)
		if err != nil || got != c.want {
			t.Errorf("%s = %d, %v; want %d", c.text, got, err, c.want)
		}
		// The printed form reads back as the same expression.
		back, err := ParseExpr(e.String())
		if err != nil || !back.Equal(e) {
			t.Errorf("%s printed as %q, read back as %q (%v)", c.text, e, back, err)
		}
	}
}

func TestExprFolds(t *testing.T) {
	m := Var("m")
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{Int(3).TimesInt(4).PlusInt(1), "13"},
		{m.TimesInt(1).PlusInt(0), "m"},
		{m.TimesInt(0), "0"},
		{CeilDiv(m.TimesInt(8960), Int(1024)), "cdiv(m*8960, 1024)"},
		{CeilDiv(Int(2049), Int(128)), "17"},
		{Div(m, Int(1)), "m"},
		{m.Minus(Var("n").Minus(Int(1))), "m - (n - 1)"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	if v, ok := Int(5).Value(); !ok || v != 5 {
		t.Errorf("Int(5).Value() = %d, %v", v, ok)
	}
	if m.IsConst() {
		t.Error("a variable is not a constant")
	}
}

func TestExprErrors(t *testing.T) {
	for _, text := range []string{"", "m +", "cdiv(m)", "cdiv(m, 2", "M", "m ^ 2", "(m", "m)", "99999999999999999999"} {
		if _, err := ParseExpr(text); err == nil {
			t.Errorf("Parse(%q) accepted", text)
		}
	}
	for _, c := range []struct{ text, want string }{
		{"cdiv(m, 0)", "want a ≥ 0 and b > 0"},
		{"k*2", `variable "k" has no value`},
		{"m*4611686018427387904", "overflows"},
		{"div(0 - m, 2)", "want a ≥ 0"},
	} {
		e, err := ParseExpr(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		if _, err := e.Eval(Env{"m": 4}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.text, err, c.want)
		}
	}
}

func TestExprJSON(t *testing.T) {
	type doc struct{ A, B Expr }
	in := doc{A: Int(12), B: CeilDiv(Var("m"), Int(64))}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"A":12,"B":"cdiv(m, 64)"}` {
		t.Errorf("marshalled %s", data)
	}
	var out doc
	if err := json.Unmarshal(data, &out); err != nil || !out.A.Equal(in.A) || !out.B.Equal(in.B) {
		t.Errorf("read back %v, %v (%v)", out.A, out.B, err)
	}
	if err := json.Unmarshal([]byte(`{"A":"m +"}`), &out); err == nil {
		t.Error("a malformed expression was accepted")
	}
	if err := json.Unmarshal([]byte(`{"A":true}`), &out); err == nil {
		t.Error("a boolean was accepted as an expression")
	}
}

func TestExprVars(t *testing.T) {
	e, _ := ParseExpr("min(sms*2, cdiv(m*n, 1024)) + m")
	if got := strings.Join(e.Vars(), ","); got != "m,n,sms" {
		t.Errorf("Vars = %s", got)
	}
}

// TestExprSubst: a variable replaced by an expression, the rest kept, and
// constants folded where the replacement makes them so.
func TestExprSubst(t *testing.T) {
	e, _ := ParseExpr("min(sms*2, cdiv(m*n, 1024)) + m")
	rows := Min(Int(2048), Max(Var("t").Minus(Int(4096)), Int(0)))
	for _, c := range []struct {
		by   Expr
		want string
	}{
		{rows, "min(sms*2, cdiv(min(2048, max(t - 4096, 0))*n, 1024)) + min(2048, max(t - 4096, 0))"},
		{Int(1024), "min(sms*2, cdiv(1024*n, 1024)) + 1024"},
		{Var("m"), e.String()},
	} {
		if got := e.Subst("m", c.by).String(); got != c.want {
			t.Errorf("Subst(m, %s) = %s, want %s", c.by, got, c.want)
		}
	}
	if got := e.Subst("m", Int(1024)).Subst("n", Int(8)).Subst("sms", Int(132)); !got.IsConst() {
		t.Errorf("every variable replaced by a constant: %s, want a constant", got)
	} else if v, _ := got.Value(); v != 8+1024 {
		t.Errorf("every variable replaced: %d, want %d", v, 8+1024)
	}
}
