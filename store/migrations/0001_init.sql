-- 0001_init.sql: the initial gradtune schema.
--
-- Times are stored as UTC RFC 3339 text with nine fractional digits, so they
-- sort lexically. Every numeric measurement column is nullable: NULL means
-- "not measured" (a compile error has no median, NVML may be unavailable).

-- runs: one row per invocation of the tuner.
CREATE TABLE runs (
    id           INTEGER PRIMARY KEY,
    started      TEXT    NOT NULL,
    finished     TEXT,
    host         TEXT    NOT NULL DEFAULT '',
    gpu_name     TEXT    NOT NULL DEFAULT '',
    gpu_uuid     TEXT    NOT NULL DEFAULT '',
    cc           TEXT    NOT NULL DEFAULT '',
    driver       TEXT    NOT NULL DEFAULT '',
    tool_version TEXT    NOT NULL DEFAULT '',
    args         TEXT    NOT NULL DEFAULT '',
    status       TEXT    NOT NULL DEFAULT 'running'
                 CHECK (status IN ('running', 'ok', 'failed', 'interrupted')),
    copy_gbps    REAL    -- measured device-to-device copy bandwidth of the run
);

-- variants: one row per distinct generated kernel (content-addressed).
CREATE TABLE variants (
    id         INTEGER PRIMARY KEY,
    kernel     TEXT NOT NULL CHECK (kernel <> ''),
    shape_key  TEXT NOT NULL CHECK (shape_key <> ''),
    params     TEXT NOT NULL,  -- canonical parameter string
    ptx_sha256 TEXT NOT NULL,
    UNIQUE (kernel, shape_key, params, ptx_sha256)
);

-- evaluations: one row per finished attempt to compile, validate and time a
-- variant on one GPU, driver and measurement mode.
CREATE TABLE evaluations (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    variant_id      INTEGER NOT NULL REFERENCES variants (id),
    gpu_uuid        TEXT    NOT NULL,
    driver          TEXT    NOT NULL,
    mode            TEXT    NOT NULL CHECK (mode IN ('cold', 'hot')),
    status          TEXT    NOT NULL
                    CHECK (status IN ('ok', 'invalid', 'compile_error', 'launch_error', 'timeout', 'skipped')),
    message         TEXT,
    registers       INTEGER,
    spill_bytes     INTEGER,
    smem_bytes      INTEGER,
    occupancy       REAL,
    max_abs_err     REAL,
    max_rel_err     REAL,
    samples         INTEGER,  -- number of timing samples
    samples_json    TEXT CHECK (samples_json IS NULL OR json_valid(samples_json)), -- sample times in µs
    median_us       REAL,
    ci_lo_us        REAL,
    ci_hi_us        REAL,
    min_us          REAL,
    throughput_gbps REAL,
    tflops          REAL,
    sm_clock_mhz    INTEGER,
    mem_clock_mhz   INTEGER,
    temperature_c   INTEGER,
    power_w         REAL,
    created         TEXT    NOT NULL
);

-- Done (variant, gpu, mode, driver, status) and Best (variant, gpu, mode, status).
CREATE INDEX evaluations_by_key ON evaluations (variant_id, gpu_uuid, mode, driver, status);
-- Evaluations filtered by run, and the foreign key's cascade.
CREATE INDEX evaluations_by_run ON evaluations (run_id);

-- winners: the chosen variant per (run, kernel, shape).
CREATE TABLE winners (
    id                 INTEGER PRIMARY KEY,
    run_id             INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kernel             TEXT    NOT NULL,
    shape_key          TEXT    NOT NULL,
    variant_id         INTEGER NOT NULL REFERENCES variants (id),
    median_us          REAL,
    baseline_name      TEXT,
    baseline_median_us REAL,
    UNIQUE (run_id, kernel, shape_key)
);

-- The foreign key to variants.
CREATE INDEX winners_by_variant ON winners (variant_id);
