package store

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
)

// OpenReadOnly opens an existing gradtune database for reading only. It
// never writes to the file and never creates files next to it: when no
// write-ahead log (path-wal) exists, that is, no connection has the
// database open for writing, the file is opened immutable (SQLite then
// takes no locks and keeps its WAL index in memory); otherwise it is opened
// read-only beside the writer, whose -wal and -shm files already exist.
//
// It refuses what Open refuses and a missing file. A database at an older
// schema than this binary's is read as it is (only Open upgrades it): the
// columns later migrations added read as not recorded (NULL, so zero),
// which keeps recorded databases readable by every later gradtune. Every
// method that writes fails on the returned DB.
func OpenReadOnly(path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("store: open: empty database path")
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: open %s: %w", path, ErrNoDatabase)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s read-only: %w", path, err)
	}
	if err := checkFile(path); err != nil {
		return nil, err
	}
	if fi.Size() == 0 {
		return nil, fmt.Errorf("store: open %s read-only: %w (the file is empty)", path, ErrNotDatabase)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	if _, err := os.Stat(path + "-wal"); errors.Is(err, fs.ErrNotExist) {
		q.Set("immutable", "1")
	} else {
		q.Set("_busy_timeout", "30000")
	}
	sdb, err := openSQL(path, q)
	if err != nil {
		return nil, err
	}
	sdb.SetMaxOpenConns(1)
	db := &DB{sql: sdb, path: path, readOnly: true}
	if err := db.checkReadable(); err != nil {
		sdb.Close()
		return nil, err
	}
	return db, nil
}

// checkReadable accepts an intact gradtune database at this binary's
// schema version or an older one, and notes its version.
func (db *DB) checkReadable() error {
	_, st, err := db.identify()
	if err != nil {
		return err
	}
	if st.appID != applicationID {
		return fmt.Errorf("store: open %s: %w (an SQLite database with application_id %#x and %d schema objects)",
			db.path, ErrNotDatabase, st.appID, st.objects)
	}
	db.schema = st.version
	return db.checkIntact(st.version)
}

// Probe reports, without creating or changing anything, why Open would
// refuse path or could not write to it: what Open refuses, a missing
// directory, and a file or directory this process may not write (SQLite
// writes the database and creates its -wal and -shm files beside it).
// A nil error means Open is expected to succeed.
func Probe(path string) error {
	if path == "" {
		return errors.New("store: open: empty database path")
	}
	if err := checkFile(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return fmt.Errorf("store: open %s: directory %s is not writable: %w", path, dir, err)
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Size() == 0) {
		return nil // Open creates it
	}
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := syscall.Access(path, 2 /* W_OK */); err != nil {
		return fmt.Errorf("store: open %s: the file is not writable: %w", path, err)
	}
	db, err := OpenReadOnly(path)
	if err != nil {
		return err
	}
	return db.Close()
}
