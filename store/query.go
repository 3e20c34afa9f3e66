package store

import (
	"errors"
	"fmt"
)

// ErrNoDatabase is returned (wrapped) by OpenReadOnly for a path where no
// database file exists: a reader never creates one.
var ErrNoDatabase = errors.New("no database file")

// Run returns the run with the given id.
func (db *DB) Run(id int64) (Run, error) {
	r, err := scanRun(db.sql.QueryRow(`SELECT `+db.runColumns()+` FROM runs WHERE id = ?`, id))
	if errNoRows(err) {
		return Run{}, db.errf(fmt.Sprintf("read run %d", id), fmt.Errorf("%w: %d", ErrNoRun, id))
	}
	if err != nil {
		return Run{}, db.errf(fmt.Sprintf("read run %d", id), err)
	}
	return r, nil
}

// ErrNoRun is returned (wrapped) by Run for an id that no run has.
var ErrNoRun = errors.New("no run with id")

// Path is the database file the DB was opened from.
func (db *DB) Path() string { return db.path }
