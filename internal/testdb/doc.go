// Package testdb opens the results databases committed under testdata/
// for tests: read-only, and one stored gzipped (NAME.db.gz) unpacked into
// the test's temporary directory first, so that nothing beside the
// committed file is written.
package testdb
