-- Version 10 (issue 30): a run records what really happened.
--  * segments: the run's stretches of constant parameters, in order, as a JSON array; each
--    {from_steps, from_t, to_steps, to_t, params, changed, results}: every parameter in effect,
--    the ones that changed at its start (none for the first), and the scene's measurements at its
--    last sample (a silo's mean_flow among them, whose window restarts at every change). The last
--    stretch of a running run has to_steps and to_t null. Written when the run starts and at every
--    change. NULL for runs recorded before this version (their changes are in their events).
--  * reset_of: a Reset starts a new run (its steps count from 0 again, as the scene does), linked
--    to the run it ended, which ends 'reset'. Before, the Reset sat inside one run, whose events
--    then went back in steps and could not be replayed.
--  * state_version: the engine's state version (GRN_ENGINE_STATE_VERSION) that recorded the run.
--    Another version moves grains otherwise, so such a run is not replayed bit for bit; NULL for
--    runs recorded before this version.
-- SQLite cannot change a CHECK in place, so runs is rebuilt as in versions 2 and 6 (foreign keys
-- off while migrating, checked before the commit), and its indexes and outbox triggers (009) made
-- again.
CREATE TABLE runs_v10 (
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
                                        'interrupted', 'idle', 'reset')),
  end_steps INTEGER,
  end_t REAL,
  digest TEXT,
  events_dropped INTEGER NOT NULL DEFAULT 0 CHECK (events_dropped >= 0),
  samples_dropped INTEGER NOT NULL DEFAULT 0 CHECK (samples_dropped >= 0),
  class_id TEXT REFERENCES classes (id),
  group_name TEXT CHECK ((group_name IS NULL) = (class_id IS NULL)),
  sample_steps INTEGER NOT NULL DEFAULT 60 CHECK (sample_steps > 0),
  reset_of INTEGER, -- a run id of this store
  state_version INTEGER CHECK (state_version > 0),
  segments TEXT CHECK (segments IS NULL OR json_valid(segments)),
  CHECK ((ended_at IS NULL) = (end_reason IS NULL))
) STRICT;
INSERT INTO runs_v10 (id, session_id, label, scene, seed, grains, engine_version, params,
  started_at, ended_at, end_reason, end_steps, end_t, digest, events_dropped, samples_dropped,
  class_id, group_name, sample_steps)
SELECT id, session_id, label, scene, seed, grains, engine_version, params, started_at, ended_at,
  end_reason, end_steps, end_t, digest, events_dropped, samples_dropped, class_id, group_name,
  sample_steps FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v10 RENAME TO runs;
CREATE INDEX runs_scene_started ON runs (scene, started_at);
CREATE INDEX runs_started ON runs (started_at);
CREATE INDEX runs_label ON runs (label);
CREATE INDEX runs_session ON runs (session_id);
CREATE INDEX runs_open ON runs (id) WHERE ended_at IS NULL;
CREATE INDEX runs_class ON runs (class_id, started_at) WHERE class_id IS NOT NULL;
CREATE TRIGGER outbox_run_insert AFTER INSERT ON runs
WHEN (SELECT enabled FROM outbox_state) BEGIN
  UPDATE outbox_state SET last_seq = last_seq + 1;
  DELETE FROM outbox WHERE kind = 'run' AND ref = CAST(NEW.id AS TEXT) AND name = '';
  INSERT INTO outbox (seq, kind, ref) SELECT last_seq, 'run', CAST(NEW.id AS TEXT) FROM outbox_state;
END;
CREATE TRIGGER outbox_run_update AFTER UPDATE ON runs
WHEN (SELECT enabled FROM outbox_state) BEGIN
  UPDATE outbox_state SET last_seq = last_seq + 1;
  DELETE FROM outbox WHERE kind = 'run' AND ref = CAST(NEW.id AS TEXT) AND name = '';
  INSERT INTO outbox (seq, kind, ref) SELECT last_seq, 'run', CAST(NEW.id AS TEXT) FROM outbox_state;
END;
