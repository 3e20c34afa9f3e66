-- 0002_nightly.sql: what the nightly regression run needs to trust a
-- measurement. Every new column is nullable; NULL in a database written
-- before this migration (or without NVML) means "not recorded".

-- The GPU state when the run began ("SM 1980 MHz, memory 3201 MHz, 34 °C,
-- 118 W"), or why there is none ("NVML unavailable: ...").
ALTER TABLE runs ADD COLUMN telemetry TEXT;

-- NVML clock event (throttle) reasons seen while the samples were taken, a
-- bit mask of nvmlClocksEventReasons; 0 when none, NULL without NVML.
ALTER TABLE evaluations ADD COLUMN throttle_reasons INTEGER;
-- Indexes into samples_json of the samples taken while the GPU throttled;
-- they are kept but left out of the median and its interval.
ALTER TABLE evaluations ADD COLUMN excluded_json TEXT
    CHECK (excluded_json IS NULL OR json_valid(excluded_json));
-- benchmath's warnings about the samples, one per line.
ALTER TABLE evaluations ADD COLUMN warnings TEXT;

-- How the winner was chosen: how many other variants' 95% CIs overlapped
-- the fastest's (a statistical tie), and the rule that picked among them.
ALTER TABLE winners ADD COLUMN ties INTEGER;
ALTER TABLE winners ADD COLUMN rule TEXT;
