package fserr

import (
	"errors"
	"io/fs"
	"os"
	"testing"
)

// TestReason: the reason of a path or link error without its paths,
// other errors untouched.
func TestReason(t *testing.T) {
	_, err := os.Open("/nonexistent/gradtune")
	if got := Reason(err); !errors.Is(got, fs.ErrNotExist) || got.Error() != "no such file or directory" {
		t.Errorf("open: %v", got)
	}
	err = os.Rename("/nonexistent/a", "/nonexistent/b")
	if got := Reason(err); got.Error() != "no such file or directory" {
		t.Errorf("rename: %v", got)
	}
	plain := errors.New("plain")
	if Reason(plain) != plain {
		t.Error("a plain error changed")
	}
}
