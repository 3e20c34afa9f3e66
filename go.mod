module github.com/gradtune/gradtune

go 1.26.8

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/mattn/go-sqlite3 v1.14.53 // indirect
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da // indirect
)
