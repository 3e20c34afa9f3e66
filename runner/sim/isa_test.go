package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/kernels/ptx/isa"
)

// TestSemanticsHaveRows: every instruction the interpreter decodes is a
// row of the ISA table, so that the table is the one list of what exists.
func TestSemanticsHaveRows(t *testing.T) {
	rows := map[string]bool{}
	for _, r := range isa.Rows() {
		rows[r.Name] = true
	}
	for name := range semantics {
		if !rows[name] {
			t.Errorf("the interpreter has semantics for %s, which has no row in the ISA table", name)
		}
	}
	// Rows the interpreter executes only as a no-op must promise nothing
	// it would skip: no destination, no memory access.
	for _, name := range []string{"membar", "fence", "nanosleep", "prefetch", "prefetchu", "griddepcontrol"} {
		r, _ := isa.Lookup(name)
		if r == nil || r.Effects&(isa.Dest|isa.Load|isa.Store) != 0 {
			t.Errorf("%s runs as a no-op, but its row is %+v", name, r)
		}
	}
}

// TestDecodeByRow: an opcode without a row is rejected as unknown, one
// with a row but no semantics as unsupported, and operand counts come
// from the row; each error is an ErrParse naming the line.
func TestDecodeByRow(t *testing.T) {
	head := ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k(\n\t.param .u64 p\n)\n{\n\t.reg .b32 %r<4>;\n"
	for _, c := range []struct{ body, want string }{
		{"\tfrob.b32 %r1, %r2;\n", "line 9 `frob.b32 %r1, %r2;`: instruction frob is not supported: the ISA table (kernels/ptx/isa) has no row for frob.b32"},
		{"\tshfl.bfly.b32 %r1, %r2, 1, 31;\n", "has no row for shfl.bfly.b32"},
		{"\tlop3.b32 %r1, %r2, %r2, %r2, 0xe8;\n", "instruction lop3 is not supported by the interpreter"},
		{"\tmovmatrix.sync.aligned.m8n8.trans.b16 %r1, %r2;\n", "instruction movmatrix.sync is not supported by the interpreter"},
		{"\tadd.u32 %r1, %r2;\n", "add takes 3 operands, found 2"},
		{"\tbar.sync 0, 32, 1;\n", "bar.sync takes 1 or 2 operands, found 3"},
	} {
		_, err := Parse(head + c.body + "\tret;\n}\n")
		if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want ErrParse containing %q", c.body, err, c.want)
		}
	}
}
