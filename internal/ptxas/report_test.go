package ptxas

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The testdata/*.txt files are stderr of ptxas 12.4.131 (Debian nvidia-cuda-toolkit
// 12.4.131~12.4.1-2) on testdata/simple.ptx and testdata/spill.ptx; testdata/capture.sh
// regenerates them.
func TestParseReportCaptured(t *testing.T) {
	tests := []struct {
		file string
		want []Report
	}{
		{"sm_80_simple.txt", []Report{
			{Arch: "sm_80", Function: "tile", Registers: 12, SharedBytes: 1024, ConstBytes: 368},
			{Arch: "sm_80", Function: "vadd", Registers: 12, ConstBytes: 380},
		}},
		{"sm_90_simple.txt", []Report{
			{Arch: "sm_90", Function: "tile", Registers: 14, SharedBytes: 1024},
			{Arch: "sm_90", Function: "vadd", Registers: 12},
		}},
		{"sm_80_spill.txt", []Report{
			{Arch: "sm_80", Function: "frame", Registers: 21, StackBytes: 64, ConstBytes: 360},
			{Arch: "sm_80", Function: "pick"},
			{Arch: "sm_80", Function: "spill", Registers: 24, StackBytes: 312, SpillStores: 308, SpillLoads: 388, ConstBytes: 368},
		}},
		{"sm_90_spill.txt", []Report{
			{Arch: "sm_90", Function: "frame", Registers: 22, StackBytes: 64},
			{Arch: "sm_90", Function: "pick"},
			{Arch: "sm_90", Function: "spill", Registers: 24, StackBytes: 312, SpillStores: 308, SpillLoads: 388},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			parsesTo(t, string(out), tt.want)
		})
	}
}

// parsesTo checks that ParseReport reads out as want.
func parsesTo(t *testing.T, out string, want []Report) {
	t.Helper()
	got, err := ParseReport(out)
	if err != nil {
		t.Fatalf("ParseReport: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseReport:\n got %+v\nwant %+v", got, want)
	}
}

// Newer ptxas releases add "used N barriers" to the register line; several constant banks are
// summed. This text is written by hand in that format, not captured.
func TestParseReportOtherForms(t *testing.T) {
	out := strings.Join([]string{
		"ptxas info    : 0 bytes gmem",
		"ptxas info    : Compiling entry function '_Z4gemmPKfS0_Pf' for 'sm_90a'",
		"ptxas info    : Function properties for _Z4gemmPKfS0_Pf",
		"    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads",
		"ptxas info    : Used 28 registers, used 1 barriers, 16 bytes cumulative stack size, 4096 bytes smem, 360 bytes cmem[0], 8 bytes cmem[2]",
		"ptxas info    : Compile time = 1.234 ms",
		"ptxas info    : Compiling entry function 'k2' for 'sm_90a'",
		"ptxas info    : Function properties for k2",
		"ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in the function 'k2'",
		"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
		"ptxas info    : Used 1 register, used 0 barriers, 360 bytes cmem[0]",
		"",
	}, "\r\n")
	parsesTo(t, out, []Report{
		{Arch: "sm_90a", Function: "_Z4gemmPKfS0_Pf", Registers: 28, SpillStores: 8, SpillLoads: 12, StackBytes: 16, SharedBytes: 4096, ConstBytes: 368},
		{Arch: "sm_90a", Function: "k2", Registers: 1, ConstBytes: 360, PerfLoss: []string{
			"(C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in the function 'k2'"}},
	})
}

// TestParseReportNoteFirst: ptxas writes its performance notes to stderr,
// which Assemble puts before stdout's reports.
func TestParseReportNoteFirst(t *testing.T) {
	note := "(C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized in the function 'k'"
	out := strings.Join([]string{
		"ptxas info    : " + note,
		"ptxas info    : Compiling entry function 'k' for 'sm_90a'",
		"ptxas info    : Function properties for k",
		"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
		"ptxas info    : Used 168 registers, used 1 barriers",
	}, "\n")
	parsesTo(t, out, []Report{{Arch: "sm_90a", Function: "k", Registers: 168, PerfLoss: []string{note}}})
}

func TestParseReportEmpty(t *testing.T) {
	for _, out := range []string{"", "ptxas info    : 0 bytes gmem\n", "ptxas warning : something\n"} {
		got, err := ParseReport(out)
		if err != nil || len(got) != 0 {
			t.Errorf("ParseReport(%q) = %v, %v; want no reports, no error", out, got, err)
		}
	}
}

func TestParseReportMalformed(t *testing.T) {
	for _, out := range []string{
		"ptxas info    : Used 12 registers, 380 bytes cmem[0]\n", // no function
		"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n",
		"ptxas info    : Compiling entry function 'k' for 'sm_80'\nptxas info    : Used x registers\n",
		"ptxas info    : Compiling entry function 'k' for 'sm_80'\nptxas info    : Function properties for k\n    many bytes stack frame\n",
		"ptxas info    : Compiling entry function k for sm_80\n",
		"ptxas info    : Compiling entry function 'k'\n",
		"ptxas info    : (C7515) Potential Performance Loss: wgmma serialized\n",                           // no function
		"ptxas info    : (C7515) Potential Performance Loss: wgmma serialized in the function 'nowhere'\n", // not reported
	} {
		if got, err := ParseReport(out); err == nil {
			t.Errorf("ParseReport(%q) = %+v, nil; want an error", out, got)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	ordered := []string{"9.1", "12.4.99", "12.4.131~12.4.1-1", "12.4.131~12.4.1-2", "12.4.131~12.4.1-10", "12.10.1", "13.0"}
	for i := range ordered {
		for j := range ordered {
			c := compareVersions(ordered[i], ordered[j])
			if (i < j) != (c < 0) || (i == j) != (c == 0) {
				t.Errorf("compareVersions(%q, %q) = %d", ordered[i], ordered[j], c)
			}
		}
	}
}
