package store

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/mattn/go-sqlite3"
)

// ErrDamaged is returned (wrapped) for a gradtune database that cannot be
// read as its schema version says: SQLite finds the file malformed
// (truncated, overwritten in part), or a table or column of the schema is
// gone.
var ErrDamaged = errors.New("damaged gradtune database")

// damaged wraps err with ErrDamaged when SQLite reports the file
// malformed or not a database, and returns it as it is otherwise.
func damaged(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB) {
		return fmt.Errorf("%w: %w (the file is truncated or was changed by another program)", ErrDamaged, err)
	}
	return err
}

// checkIntact reports a database whose pages SQLite finds inconsistent
// (PRAGMA quick_check, which reads every page once) or whose tables and
// columns are not those of its schema version.
func (db *DB) checkIntact(version int) error {
	rows, err := db.sql.Query("PRAGMA quick_check(5)")
	if err != nil {
		return db.errf("check pages", damaged(err))
	}
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return db.errf("check pages", damaged(err))
		}
		if s != "ok" {
			problems = append(problems, strings.Join(strings.Fields(s), " "))
		}
	}
	if err := rows.Close(); err != nil {
		return db.errf("check pages", damaged(err))
	}
	if err := rows.Err(); err != nil {
		return db.errf("check pages", damaged(err))
	}
	if len(problems) > 0 {
		return db.errf("check pages", fmt.Errorf("%w: %s", ErrDamaged, strings.Join(problems, "; ")))
	}
	return db.checkColumns(version)
}

// checkColumns compares the database's tables and columns with those
// the migrations up to version create.
func (db *DB) checkColumns(version int) error {
	want, err := schemaColumns(version)
	if err != nil {
		return err
	}
	have, err := tableColumns(db.sql)
	if err != nil {
		return db.errf("read the schema", damaged(err))
	}
	for _, table := range sortedKeys(want) {
		cols, ok := have[table]
		if !ok {
			return db.errf("check the schema", fmt.Errorf("%w: table %s is missing (schema version %d has tables %s)",
				ErrDamaged, table, version, strings.Join(sortedKeys(want), ", ")))
		}
		for _, c := range want[table] {
			if !slices.Contains(cols, c) {
				return db.errf("check the schema", fmt.Errorf("%w: column %s.%s is missing (schema version %d)", ErrDamaged, table, c, version))
			}
		}
	}
	return nil
}

// tableColumns lists the columns of every table of q's database.
func tableColumns(q *sql.DB) (map[string][]string, error) {
	rows, err := q.Query(`SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			return nil, err
		}
		out[table] = append(out[table], col)
	}
	return out, rows.Err()
}

// schemaColumns is the tables and columns the first version migrations
// create, read from an in-memory database they are applied to (once per
// version).
func schemaColumns(version int) (map[string][]string, error) {
	v, _ := schemas.LoadOrStore(version, sync.OnceValues(func() (map[string][]string, error) {
		ms, err := loadMigrations(migrationFS)
		if err != nil {
			return nil, err
		}
		mem, err := sql.Open("sqlite3", "file::memory:")
		if err != nil {
			return nil, fmt.Errorf("store: schema of version %d: %w", version, err)
		}
		defer mem.Close()
		mem.SetMaxOpenConns(1)
		for _, m := range ms[:min(version, len(ms))] {
			if _, err := mem.Exec(m.sql); err != nil {
				return nil, fmt.Errorf("store: schema of version %d: %s: %w", version, m.name, err)
			}
		}
		return tableColumns(mem)
	}))
	return v.(func() (map[string][]string, error))()
}

// schemas caches schemaColumns by version.
var schemas sync.Map

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
