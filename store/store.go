package store

import (
	"bytes"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3" // registers the "sqlite3" driver; its error codes
)

// ErrNotDatabase is returned (wrapped) by Open for a path that exists but is
// not a gradtune database: a file that is not SQLite, or an SQLite database
// of some other program.
var ErrNotDatabase = errors.New("not a gradtune database")

// ErrSchemaTooNew is returned (wrapped) by Open for a gradtune database whose
// schema was written by a newer version of gradtune than this one.
var ErrSchemaTooNew = errors.New("database schema is newer than this gradtune knows")

// applicationID marks the SQLite header of a gradtune database ("gTUN").
const applicationID = 0x6754554e

// sqliteMagic is the first 16 bytes of every SQLite 3 database file.
const sqliteMagic = "SQLite format 3\x00"

// busyTimeout is how long a connection waits for another process's lock.
const busyTimeout = 30 * time.Second

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered schema step.
type migration struct {
	version int
	name    string
	sql     string
}

var migrationName = regexp.MustCompile(`^([0-9]{4})_[a-z0-9_]+\.sql$`)

// loadMigrations reads the embedded migrations and checks that they are
// numbered 1, 2, 3, ... without gaps.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, fmt.Errorf("store: read embedded migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("store: embedded migration %q: name must be NNNN_words.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		text, err := fs.ReadFile(fsys, "migrations/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("store: read embedded migration %s: %w", e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(text)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("store: embedded migration %s: want version %04d (migrations must be numbered from 0001 without gaps)", m.name, i+1)
		}
	}
	return ms, nil
}

// DB is an open gradtune database. It is safe for concurrent use by
// multiple goroutines.
type DB struct {
	sql  *sql.DB
	path string
	// schema is the database's schema version: this binary's after Open,
	// possibly an older one after OpenReadOnly. Columns added by a later
	// migration read as NULL (see column).
	schema int
	// readOnly is set by OpenReadOnly; every write fails with ErrReadOnly
	// before it reaches SQLite (whose own refusal would name a missing
	// column first in an older database).
	readOnly bool
}

// ErrReadOnly is returned (wrapped) by every method that writes, on a DB
// from OpenReadOnly.
var ErrReadOnly = errors.New("database opened readonly")

// writable fails on a DB opened read-only.
func (db *DB) writable(op string) error {
	if db.readOnly {
		return db.errf(op, ErrReadOnly)
	}
	return nil
}

// Open opens the gradtune database at path, creating the file if it does not
// exist, and applies any pending schema migrations. It refuses, without
// writing to it, a path that is a directory, a file that is not an SQLite
// database, an SQLite database of another program (ErrNotDatabase), and a
// gradtune database with a newer schema than this binary knows
// (ErrSchemaTooNew).
func Open(path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("store: open: empty database path")
	}
	if err := checkFile(path); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Set("_busy_timeout", strconv.Itoa(int(busyTimeout/time.Millisecond)))
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	sdb, err := openSQL(path, q)
	if err != nil {
		return nil, err
	}
	// One connection: goroutines of this process take turns, so they never
	// see SQLITE_BUSY from each other; other processes are handled by the
	// busy timeout.
	sdb.SetMaxOpenConns(1)
	db := &DB{sql: sdb, path: path}
	if err := db.init(); err != nil {
		sdb.Close()
		return nil, err
	}
	return db, nil
}

// openSQL opens path with the connection parameters q. A file: URI with an
// escaped path keeps '?', '#' and '%' in file names from being read as URI
// syntax.
func openSQL(path string, q url.Values) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	dsn := "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath() + "?" + q.Encode()
	sdb, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return sdb, nil
}

// checkFile rejects a path that cannot hold a gradtune database, reading but
// never writing it.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(path)
		if di, derr := os.Stat(dir); derr != nil {
			return fmt.Errorf("store: open %s: directory %s: %w", path, dir, derr)
		} else if !di.IsDir() {
			return fmt.Errorf("store: open %s: %s is not a directory", path, dir)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("store: open %s: %w: it is a directory, want a database file (for example %s)", path, ErrNotDatabase, filepath.Join(path, "tune.db"))
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("store: open %s: %w: not a regular file (mode %s)", path, ErrNotDatabase, fi.Mode())
	}
	if fi.Size() == 0 {
		return nil // SQLite treats an empty file as an empty database.
	}
	isDB, err := IsSQLite(path)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if !isDB {
		return fmt.Errorf("store: open %s: %w (the file is not an SQLite database; left unchanged)", path, ErrNotDatabase)
	}
	return nil
}

// IsSQLite reports whether the file at path starts with the header of an
// SQLite 3 database ("SQLite format 3\x00"), whatever program wrote it. A
// missing file is not one. Writers of other formats ask it before they
// replace a file: no output of gradtune ever takes the place of a
// database.
func IsSQLite(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read header: %w", err)
	}
	return bytes.Equal(head[:n], []byte(sqliteMagic)), nil
}

// identify reads the database's identity and version and checks them
// against the migrations this binary knows (checkState); it writes
// nothing, so a foreign file is left as it is.
func (db *DB) identify() ([]migration, dbState, error) {
	ms, err := loadMigrations(migrationFS)
	if err != nil {
		return nil, dbState{}, err
	}
	st, err := readState(db.sql)
	if err != nil {
		return nil, dbState{}, db.errf("read schema version", damaged(err))
	}
	return ms, st, db.checkState(st, len(ms))
}

// init checks the identity and the integrity of the database, migrates it
// and turns on WAL.
func (db *DB) init() error {
	ms, st, err := db.identify()
	if err != nil {
		return err
	}
	if st.version > 0 {
		if err := db.checkIntact(st.version); err != nil {
			return err
		}
	}
	if err := db.enableWAL(); err != nil {
		return err
	}
	db.schema = len(ms)
	if st.version == len(ms) {
		return nil
	}
	for {
		done, err := db.applyNext(ms)
		if err != nil || done {
			return err
		}
	}
}

// column is expr when the database's schema has the column, which
// migration since added, and NULL otherwise: a database opened read-only
// at an older schema reads the newer columns as not recorded.
func (db *DB) column(expr string, since int) string {
	if db.schema >= since {
		return expr
	}
	return "NULL"
}

// dbState is what the SQLite header and catalogue say about a database.
type dbState struct {
	appID   int64
	version int
	objects int
}

type querier interface {
	QueryRow(query string, args ...any) *sql.Row
}

// readState reads the three in one statement, so from one snapshot: read
// one after another outside a transaction, they could straddle another
// process's first migration and show its user_version and tables with
// the application_id from before (a new database taken for a foreign one).
func readState(q querier) (dbState, error) {
	var st dbState
	err := q.QueryRow(`SELECT (SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version),
		(SELECT count(*) FROM sqlite_master)`).Scan(&st.appID, &st.version, &st.objects)
	return st, err
}

// checkState accepts an empty database and a gradtune database this binary
// can read.
func (db *DB) checkState(st dbState, known int) error {
	switch {
	case st.appID == applicationID:
		if st.version > known {
			return fmt.Errorf("store: open %s: %w: schema version %d, this gradtune knows up to %d; use a newer gradtune or another --db file",
				db.path, ErrSchemaTooNew, st.version, known)
		}
		return nil
	case st.appID == 0 && st.version == 0 && st.objects == 0:
		return nil // empty: a new database
	default:
		return fmt.Errorf("store: open %s: %w (an SQLite database with application_id %#x, user_version %d and %d schema objects; left unchanged)",
			db.path, ErrNotDatabase, st.appID, st.version, st.objects)
	}
}

// enableWAL switches the file to write-ahead logging. The setting is
// persistent, so later connections use it too.
//
// Switching needs the file to itself, and SQLite answers a switch that
// finds other connections on the file (another process opening the same
// new database) with SQLITE_BUSY at once, without its busy handler: so
// the switch is retried, with a short sleep, until busyTimeout.
func (db *DB) enableWAL() error {
	var mode string
	deadline := time.Now().Add(busyTimeout)
	for {
		err := db.sql.QueryRow("PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil {
			break
		}
		var se sqlite3.Error
		if !errors.As(err, &se) || (se.Code != sqlite3.ErrBusy && se.Code != sqlite3.ErrLocked) || time.Now().After(deadline) {
			return db.errf("enable WAL journal", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.EqualFold(mode, "wal") {
		return db.errf("enable WAL journal", fmt.Errorf("journal mode is %q, want wal (is the file on a file system without shared memory support?)", mode))
	}
	return nil
}

// applyNext applies the migration after the database's current version in
// one transaction, re-reading the version under the write lock so that two
// processes opening the same new file do not both migrate it. It reports
// done when there was nothing left to apply.
func (db *DB) applyNext(ms []migration) (done bool, err error) {
	tx, err := db.sql.Begin() // BEGIN IMMEDIATE: takes the write lock now
	if err != nil {
		return false, db.errf("begin migration", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	st, err := readState(tx)
	if err != nil {
		return false, db.errf("read schema version", err)
	}
	if err := db.checkState(st, len(ms)); err != nil {
		return false, err
	}
	if st.version == len(ms) {
		return true, tx.Commit()
	}
	m := ms[st.version]
	if _, err := tx.Exec(m.sql); err != nil {
		return false, db.errf("apply migration "+m.name, err)
	}
	// PRAGMA takes no bound parameters; both values are integers.
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
		return false, db.errf("set schema version after "+m.name, err)
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
		return false, db.errf("set application id", err)
	}
	if err := tx.Commit(); err != nil {
		return false, db.errf("commit migration "+m.name, err)
	}
	return false, nil
}

// Close closes the database. A DB must not be used after Close.
func (db *DB) Close() error {
	if err := db.sql.Close(); err != nil {
		return db.errf("close", err)
	}
	return nil
}

// errf wraps err with the database path and the operation that failed.
func (db *DB) errf(op string, err error) error {
	return fmt.Errorf("store %s: %s: %w", db.path, op, err)
}
