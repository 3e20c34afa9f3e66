package sweep

import "testing"

func TestTake(t *testing.T) {
	t.Setenv("GRADTUNE_SWEEP", "")
	t.Setenv("GRADTUNE_PTXAS_ALL", "")
	n := 0
	for i := range 30 {
		if Take(i, 3) {
			n++
		}
	}
	if n != 10 || Full() || Describe(12) != "a sample of one in 12 (GRADTUNE_SWEEP=full takes all)" {
		t.Errorf("sample: %d of 30, Full %v, %q", n, Full(), Describe(12))
	}
	for _, env := range [][2]string{{"GRADTUNE_SWEEP", "full"}, {"GRADTUNE_PTXAS_ALL", "1"}} {
		t.Setenv(env[0], env[1])
		if !Full() || !Take(7, 3) {
			t.Errorf("%s=%s: Full %v, Take(7, 3) %v", env[0], env[1], Full(), Take(7, 3))
		}
		t.Setenv(env[0], "")
	}
}
