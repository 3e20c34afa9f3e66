// Package store keeps gradtune's results in an SQLite database: the runs of
// the tuner, the variants it generated, every evaluation of a variant, and
// the winner per kernel and shape.
//
// # Database file
//
// Open creates the file when it does not exist and brings its schema up to
// date. The schema lives in numbered SQL files under migrations/ (0001_init.sql,
// 0002_....sql, ...), embedded in the binary. The number of the last applied
// migration is kept in the database header (PRAGMA user_version), and the
// header's application_id marks the file as a gradtune database. Each
// migration runs in its own transaction together with the version bump, so a
// killed upgrade leaves the database at the previous version. A database
// whose version is newer than this binary knows is refused (ErrSchemaTooNew)
// rather than misread. A path that is a directory, a file that is not
// SQLite, or an SQLite file of some other program is refused
// (ErrNotDatabase) before anything is written to it, and so is a damaged
// database (ErrDamaged): one SQLite finds malformed (PRAGMA quick_check
// reads every page once), or one that lacks a table or a column of its
// schema version.
//
// IsSQLite tells an SQLite file by its header; every writer of another
// format (export, report, crosscheck) asks it first, so that no output
// ever replaces a database.
//
// OpenReadOnly opens an existing database for reading and never writes or
// creates a file: when no writer has the database open it opens it
// immutable, so reading a WAL database leaves no -wal and -shm files (the
// databases committed under testdata/ are read this way). It reads a
// database at an older schema as it is: columns that later migrations
// added read as NULL (zero), so recorded databases stay readable; every
// write on a read-only DB fails with ErrReadOnly. Probe answers,
// without creating or changing anything, whether Open would succeed and be
// able to write, so that a command can refuse a bad path before it starts
// a GPU.
//
// Connections use foreign keys, a busy timeout (so a second process, for
// example a report generated while a tune runs, waits instead of failing),
// immediate write transactions and synchronous=NORMAL. The journal is switched
// to WAL once the file is known to be a gradtune database; WAL is a property
// of the file and stays on for every later connection. The handle uses a
// single connection, so a DB is safe for concurrent use by many goroutines of
// one process, which are served one at a time.
//
// # Durability
//
// Every method that writes commits before it returns; there are no long
// transactions. A run that is killed loses nothing it had finished, and Done
// lets a re-run skip what is already there. A commit is in the write-ahead
// log (the operating system's cache) when it returns, which a killed
// process cannot undo; it is not fsynced (synchronous=NORMAL, what WAL
// needs to stay consistent), so a crash of the machine itself can roll
// back the last commits, which a re-run measures again. An fsync per
// evaluation would cost more than validating it.
//
// # Content keys
//
// An evaluation is identified by content (Key): kernel, shape key, canonical
// parameter string and PTX sha256 (together a variant), plus GPU UUID, driver
// version and measurement mode ("cold" flushes L2 before each sample, "hot"
// does not). Done returns the latest evaluation with that key unless its
// status is launch_error or timeout, which are transient and retried.
//
// A vendor baseline (cuBLAS) is stored the same way, as the evaluation of a
// pseudo-variant of the kernel and shape whose params are
// eval.BaselineParams(name) ("baseline=cublas") and whose PTX hash is that
// of the baseline's description, so Done skips it on re-runs like a
// variant; the winner's baseline_name and baseline_median_us say what the
// winner was compared with.
//
// # Merging
//
// Merge copies every run of one or more source databases into a
// destination with every evaluation (its samples included) and winner
// of the run; MergeInto writes the merge of sources to a file. Ids are
// the destination's own: the runs a merge adds are numbered in the order
// they started, so the newest run stays the one with the highest id.
//
// A run's identity across databases is what BeginRun writes once:
// started (to the nanosecond), host, GPU name and UUID, compute
// capability, driver, tool version and args. An evaluation's identity is
// its run's, its content key (Key) and its rank among the run's
// evaluations of that key in recording order (a run can record a key
// more than once, as a retry of a transient failure does); a winner's is
// its run's, kernel and shape. A row whose identity the destination
// holds is compared column by column (values as stored; columns a
// source's older schema lacks are not compared): equal, it is already
// present, so merging a database again, or merging an output with one of
// its inputs, adds nothing. The state of a run (finished, status, copy
// bandwidth, telemetry) tells copies of one run apart: a copy taken while
// the run was "running" is an earlier snapshot of the finished run, whose
// state and winners replace it, and to which evaluations are only added.
// Any other difference is a conflict: the destination's row is kept, and
// the source's is reported (MergeReport.Conflicts), never dropped
// silently; MergeInto then writes nothing (ErrMergeConflict). Winners of
// one kernel, shape, GPU and mode from different runs are no conflict;
// the report names the newest (MergeReport.Superseded) where the runs
// come from different sources.
//
// MergeInto refuses an output that is one of the sources, by path or as
// the same file (os.SameFile: a link, another spelling), a directory, a
// file that is not a gradtune database, and a database with a -wal file
// beside it (one a process is writing); an existing gradtune database is
// merged into, as the first source. Sources are read through
// OpenReadOnly, so they are never written and may be at an older schema
// (the output is at this binary's). The merge is written to a temporary
// file in the output's directory, synced and renamed over the output, so
// a killed merge leaves the output as it was (and, killed outright, a
// ".NAME.*" temporary file).
//
// # Zero and NULL
//
// Measured quantities are NULL in the database when they were not measured and
// read back as zero. The rules on writing are: timing (samples, median, CI,
// min, throughput, TFLOP/s) and telemetry (clocks, temperature, power) are
// NULL when zero (throttle reasons are NULL exactly when there is no
// telemetry); resources (registers, spill bytes, shared memory,
// occupancy) are NULL when all four are zero, since a compiled kernel uses
// registers, and otherwise stored as given, so "no spills" is a stored 0;
// errors (max abs/rel) are NULL when both are zero and the status is not
// "ok", so an exact match of a valid variant is a stored 0 while a variant
// rejected before validation has none. A NaN (for example the error of a
// variant that produced NaN) is kept: SQLite cannot hold a NaN REAL, so it is
// stored as the text 'NaN' and read back as NaN. Sample times are a JSON
// array of microseconds; a non-finite sample is written as null and read
// back as NaN.
//
// # Layering
//
// Of gradtune, the package imports only the leaf package eval, whose Status
// and Mode values are exactly those the schema allows. The command adapts
// the runner's results into Evaluation values; the runner never talks SQL.
package store
