-- Version 6 (issue 16): a session nobody watched or changed for the idle timeout ends by itself,
-- and its run says so: end_reason 'idle'. SQLite cannot change a CHECK in place, so runs is
-- rebuilt as in version 2 (foreign keys off while migrating, checked before the commit).
CREATE TABLE runs_v6 (
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
                                        'interrupted', 'idle')),
  end_steps INTEGER,
  end_t REAL,
  digest TEXT,
  events_dropped INTEGER NOT NULL DEFAULT 0 CHECK (events_dropped >= 0),
  samples_dropped INTEGER NOT NULL DEFAULT 0 CHECK (samples_dropped >= 0),
  CHECK ((ended_at IS NULL) = (end_reason IS NULL))
) STRICT;
INSERT INTO runs_v6 SELECT id, session_id, label, scene, seed, grains, engine_version, params,
  started_at, ended_at, end_reason, end_steps, end_t, digest, events_dropped, samples_dropped
  FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v6 RENAME TO runs;
CREATE INDEX runs_scene_started ON runs (scene, started_at);
CREATE INDEX runs_started ON runs (started_at);
CREATE INDEX runs_label ON runs (label);
CREATE INDEX runs_session ON runs (session_id);
CREATE INDEX runs_open ON runs (id) WHERE ended_at IS NULL;
