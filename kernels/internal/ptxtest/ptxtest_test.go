package ptxtest

import (
	"strings"
	"testing"
)

const good = `.version 7.0
.target sm_80
.address_size 64

.visible .entry k(
	.param .u64 k_param_p
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<3>;

	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	@!%p1 bra $L_if1_end;
$L_loop2_top:
	@!%p1 bra $L_loop2_end;
	add.u32 %r2, %r1, 1;
	bra $L_loop2_top;
$L_loop2_end:
$L_if1_end:
	ret;
}
`

func TestGood(t *testing.T) {
	ifs, loops, problems := Labels(good)
	if ifs != 1 || loops != 1 || len(problems) != 0 {
		t.Errorf("Labels = %d ifs, %d loops, %v", ifs, loops, problems)
	}
	decls, problems := Regs(good)
	if len(problems) != 0 || len(decls) != 1 || decls[0]["%r"] != 3 || decls[0]["%p"] != 2 {
		t.Errorf("Regs = %v, %v", decls, problems)
	}
}

func TestProblems(t *testing.T) {
	cases := []struct {
		name, old, new, want string
		regs                 bool
	}{
		{"undefined target", "bra $L_if1_end;", "bra $L_if9_end;", "branch to undefined label $L_if9_end", false},
		{"label twice", "$L_if1_end:\n", "$L_if1_end:\n$L_if1_end:\n", "label $L_if1_end defined 2 times", false},
		{"overlap", "$L_loop2_end:\n$L_if1_end:\n", "$L_if1_end:\n$L_loop2_end:\n", "overlap", false},
		{"loop without top", "$L_loop2_top:\n", "", "lacks its top or end label", false},
		{"undeclared register", "add.u32 %r2, %r1, 1;", "add.u32 %r3, %r1, 1;", "highest register used is 3, declared %r<3>", true},
		{"over-declared", ".reg .b32 %r<3>;", ".reg .b32 %r<4>;", "highest register used is 2, declared %r<4>", true},
		{"unused class", ".reg .b32 %r<3>;", ".reg .b32 %r<3>;\n\t.reg .f32 %f<2>;", "class %f declared but unused", true},
		{"wrong class type", ".reg .pred %p<2>;", ".reg .b32 %p<2>;", "class %p declared as .b32", true},
		{"register zero", "add.u32 %r2, %r1, 1;", "add.u32 %r2, %r0, 1;", "starts at 1", true},
	}
	for _, c := range cases {
		text := strings.Replace(good, c.old, c.new, 1)
		if text == good {
			t.Fatalf("%s: %q not found", c.name, c.old)
		}
		var problems []string
		if c.regs {
			_, problems = Regs(text)
		} else {
			_, _, problems = Labels(text)
		}
		if !strings.Contains(strings.Join(problems, "\n"), c.want) {
			t.Errorf("%s: problems %q lack %q", c.name, problems, c.want)
		}
	}
}
