-- grainlab's store, version 1: sessions, their runs, each run's timed events, 4 Hz measurement
-- samples and final results. Applied by grainlabd at start-up (PRAGMA user_version = 1).
-- Times are Unix seconds (REAL); simulated times are seconds (t) and steps of 1/240 s.

CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  join_code TEXT NOT NULL,
  label TEXT NOT NULL,
  private INTEGER NOT NULL CHECK (private IN (0, 1)),
  created_at REAL NOT NULL,
  ended_at REAL
) STRICT;

CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id),
  label TEXT NOT NULL,
  scene TEXT NOT NULL,
  seed INTEGER NOT NULL,
  grains INTEGER NOT NULL,
  engine_version TEXT NOT NULL,
  params TEXT NOT NULL CHECK (json_valid(params)), -- every parameter at the start, JSON object
  started_at REAL NOT NULL,
  ended_at REAL,
  end_reason TEXT CHECK (end_reason IN ('finished', 'switched', 'deleted', 'failed', 'interrupted')),
  end_steps INTEGER,
  end_t REAL,
  digest TEXT, -- the engine's state digest at end_steps (hex), what a replay must reproduce
  CHECK ((ended_at IS NULL) = (end_reason IS NULL))
) STRICT;
CREATE INDEX runs_scene_started ON runs (scene, started_at);
CREATE INDEX runs_started ON runs (started_at);
CREATE INDEX runs_label ON runs (label);
CREATE INDEX runs_session ON runs (session_id);
CREATE INDEX runs_open ON runs (id) WHERE ended_at IS NULL;

-- the start parameters again, one row each, so a range filter on any of them is an index lookup
CREATE TABLE run_params (
  run_id INTEGER NOT NULL REFERENCES runs (id),
  name TEXT NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (run_id, name)
) STRICT, WITHOUT ROWID;
CREATE INDEX run_params_value ON run_params (name, value, run_id);

-- the measurements at the end of the run (and derived figures, e.g. a silo's mean flow)
CREATE TABLE run_results (
  run_id INTEGER NOT NULL REFERENCES runs (id),
  name TEXT NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (run_id, name)
) STRICT, WITHOUT ROWID;
CREATE INDEX run_results_value ON run_results (name, value, run_id);

-- parameter changes and actions (what a replay applies, at `steps`), and the rest for the record
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs (id),
  steps INTEGER NOT NULL,
  t REAL NOT NULL,
  at REAL NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL CHECK (json_valid(detail))
) STRICT;
CREATE INDEX events_run ON events (run_id, id);

-- one row per 0.25 s of simulated time; a column per measurement key (NULL: not defined)
CREATE TABLE samples (
  run_id INTEGER NOT NULL REFERENCES runs (id),
  steps INTEGER NOT NULL,
  t REAL NOT NULL,
  state TEXT NOT NULL,
  angle REAL, top REAL, cx REAL, cz REAL, over_max REAL, flowing REAL, alive REAL,
  front REAL, flow REAL, mass_above REAL, fill REAL, beverloo REAL,
  PRIMARY KEY (run_id, steps)
) STRICT, WITHOUT ROWID;
