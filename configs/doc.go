// Package configs will hold the committed tuned tables
// (configs/<gpu>/<preset>.json) that trainers embed, with Lookup and the
// JSON, Go and C exporters. It must stay free of cgo, SQLite and the driver
// so that trainers can import it.
//
// Nothing is implemented yet.
package configs
