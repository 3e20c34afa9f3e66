package store

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ErrNoDatabase is returned (wrapped) by OpenReadOnly for a path where no
// database file exists: a reader never creates one.
var ErrNoDatabase = errors.New("no database file")

// OpenReadOnly opens the gradtune database at path for reading only: it
// never creates, migrates or writes the file, and leaves no -wal or -shm
// files beside it. It refuses a missing file (ErrNoDatabase), a path that
// is not a gradtune database (ErrNotDatabase, including an empty file) and
// a database with a newer schema than this binary knows (ErrSchemaTooNew).
//
// A database with a write-ahead log beside it may be in use by a tuner, so
// it is opened with mode=ro, which reads the log and waits for the writer's
// locks; one without a log has no writer at the moment of opening and is
// opened immutable, which needs no lock files at all (the recorded
// databases under testdata/ stay untouched). A tuner that starts writing
// while an immutable reader is open is not seen by that reader.
//
// Every method that writes fails on the returned DB.
func OpenReadOnly(path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("store: open: empty database path")
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: open %s: %w", path, ErrNoDatabase)
	}
	if err := checkFile(path); err != nil {
		return nil, err
	}
	if fi.Size() == 0 {
		return nil, fmt.Errorf("store: open %s: %w (the file is empty)", path, ErrNotDatabase)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	q := url.Values{}
	q.Set("_busy_timeout", strconv.Itoa(int(busyTimeout/time.Millisecond)))
	q.Set("mode", "ro")
	if _, err := os.Stat(abs + "-wal"); errors.Is(err, fs.ErrNotExist) {
		q.Set("immutable", "1")
	}
	dsn := "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath() + "?" + q.Encode()
	sdb, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	sdb.SetMaxOpenConns(1)
	db := &DB{sql: sdb, path: path}
	if err := db.checkReadable(); err != nil {
		sdb.Close()
		return nil, err
	}
	return db, nil
}

// checkReadable accepts a gradtune database whose schema this binary
// knows, without migrating it.
func (db *DB) checkReadable() error {
	ms, err := loadMigrations(migrationFS)
	if err != nil {
		return err
	}
	st, err := readState(db.sql)
	if err != nil {
		return db.errf("read schema version", err)
	}
	if st.appID != applicationID {
		return fmt.Errorf("store: open %s: %w (application_id %#x, %d schema objects)", db.path, ErrNotDatabase, st.appID, st.objects)
	}
	if err := db.checkState(st, len(ms)); err != nil {
		return err
	}
	if st.version < len(ms) {
		return fmt.Errorf("store: open %s: schema version %d is older than this gradtune's %d; open it once with tune (which migrates it) before reading it", db.path, st.version, len(ms))
	}
	return nil
}

// Run returns the run with the given id.
func (db *DB) Run(id int64) (Run, error) {
	r, err := scanRun(db.sql.QueryRow(`SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
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
