-- Version 2: a run closed by an orderly shutdown of the daemon ends 'stopped' (version 1 called
-- that 'finished', which now means what it says: the run was brought to its end). SQLite cannot
-- change a CHECK in place, so runs is rebuilt (the documented 12-step way: grainlabd runs
-- migrations with foreign keys off and checks them before it commits).
CREATE TABLE runs_v2 (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id),
  label TEXT NOT NULL,
  scene TEXT NOT NULL,
  seed INTEGER NOT NULL,
  grains INTEGER NOT NULL,
  engine_version TEXT NOT NULL,
  params TEXT NOT NULL CHECK (json_valid(params)),
  started_at REAL NOT NULL,
  ended_at REAL,
  end_reason TEXT CHECK (end_reason IN ('finished', 'stopped', 'switched', 'deleted', 'failed',
                                        'interrupted')),
  end_steps INTEGER,
  end_t REAL,
  digest TEXT,
  CHECK ((ended_at IS NULL) = (end_reason IS NULL))
) STRICT;
INSERT INTO runs_v2 SELECT id, session_id, label, scene, seed, grains, engine_version, params,
  started_at, ended_at, CASE end_reason WHEN 'finished' THEN 'stopped' ELSE end_reason END,
  end_steps, end_t, digest FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v2 RENAME TO runs;
CREATE INDEX runs_scene_started ON runs (scene, started_at);
CREATE INDEX runs_started ON runs (started_at);
CREATE INDEX runs_label ON runs (label);
CREATE INDEX runs_session ON runs (session_id);
CREATE INDEX runs_open ON runs (id) WHERE ended_at IS NULL;
