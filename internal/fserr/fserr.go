// Package fserr says why a file operation failed without the path it
// failed on, for messages that name the path once, their own way.
package fserr

import (
	"errors"
	"io/fs"
	"os"
)

// Reason drops the path of an *fs.PathError or *os.LinkError (a
// temporary file's, say), keeping the operation's reason; any other
// error is returned as it is.
func Reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
