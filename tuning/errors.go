package tuning

import (
	"errors"
	"fmt"
)

// InputError is an error in what the user asked for: a command reports it
// as a usage error.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// inputf returns an *InputError with a formatted message (%w wraps).
func inputf(format string, args ...any) error {
	return &InputError{fmt.Errorf(format, args...)}
}

// IsInput reports whether err is, or wraps, an *InputError.
func IsInput(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}
