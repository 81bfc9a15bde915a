-- Version 9 (issue 20): an outbox, so that a cluster's results database (PostgreSQL, --results-db)
-- receives every change of the record that GET /api/runs reads: sessions, runs with their start
-- parameters and results, classes and groups. Triggers add an entry in the same transaction as
-- the change, so no change commits without one; grainlabd's shipper reads the entries in order,
-- upserts the rows as they are then into PostgreSQL, and deletes the entries after PostgreSQL
-- has committed them (at least once; the upserts make a repeat harmless). An entry names a row,
-- not its values: a row changed again before it shipped keeps one entry, moved to the end.
-- Tokens stay here: no entry and no shipped row carries a token or its hash (sessions'
-- control_hash and viewer_hash, classes' teacher_hash).
--
-- outbox_state holds whether entries are made (enabled: only while grainlabd runs with
-- --results-db; turning it on queues every existing row once), the last entry number (entries
-- are numbered by this counter, never reused, so the shipper can read "everything after n" while
-- shipped entries are deleted), and this store's instance: a random id that tells the results
-- database one node's store from another that claims the same node id.
CREATE TABLE outbox_state (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  enabled INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
  last_seq INTEGER NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
  instance TEXT NOT NULL CHECK (length(instance) = 16)
) STRICT;
INSERT INTO outbox_state (one, enabled, last_seq, instance) VALUES (1, 0, 0, lower(hex(randomblob(8))));

CREATE TABLE outbox (
  seq INTEGER PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('session', 'run', 'class', 'group')),
  ref TEXT NOT NULL,             -- the session's, run's or class's id (a group's class)
  name TEXT NOT NULL DEFAULT '' -- a group's name
) STRICT;
CREATE INDEX outbox_row ON outbox (kind, ref, name);

-- One entry per changed row: the row's older entry, if any, gives way to a new one at the end.
CREATE TRIGGER outbox_session_insert AFTER INSERT ON sessions
WHEN (SELECT enabled FROM outbox_state) BEGIN
  UPDATE outbox_state SET last_seq = last_seq + 1;
  DELETE FROM outbox WHERE kind = 'session' AND ref = NEW.id AND name = '';
  INSERT INTO outbox (seq, kind, ref) SELECT last_seq, 'session', NEW.id FROM outbox_state;
END;
CREATE TRIGGER outbox_session_update AFTER UPDATE OF private, created_at, ended_at ON sessions
WHEN (SELECT enabled FROM outbox_state) BEGIN
  UPDATE outbox_state SET last_seq = last_seq + 1;
  DELETE FROM outbox WHERE kind = 'session' AND ref = NEW.id AND name = '';
  INSERT INTO outbox (seq, kind, ref) SELECT last_seq, 'session', NEW.id FROM outbox_state;
END;
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
-- a run's parameters and results ship with their run (INSERT OR REPLACE fires these too)
CREATE TRIGGER outbox_param_insert AFTER INSERT ON run_params
WHEN (SELECT enabled FROM outbox_state) BEGIN
  UPDATE outbox_state SET last_seq = last_seq + 1;
  DELETE FROM outbox WHERE kind = 'run' AND ref = CAST(NEW.run_id AS TEXT) AND name = '';
  INSERT INTO outbox (seq, kind, ref) SELECT last_seq, 'run', CAST(NEW.run_id AS TEXT) FROM outbox_state;
END;
CREATE TRIGGER outbox_result_insert AFTER INSERT ON run_results
WHEN (SELECT enabled FROM outbox_state) BEGIN
  UPDATE outbox_state SET last_seq = last_seq + 1;
  DELETE FROM outbox WHERE kind = 'run' AND ref = CAST(NEW.run_id AS TEXT) AND name = '';
  INSERT INTO outbox (seq, kind, ref) SELECT last_seq, 'run', CAST(NEW.run_id AS TEXT) FROM outbox_state;
END;
CREATE TRIGGER outbox_class_insert AFTER INSERT ON classes
WHEN (SELECT enabled FROM outbox_state) BEGIN
  UPDATE outbox_state SET last_seq = last_seq + 1;
  DELETE FROM outbox WHERE kind = 'class' AND ref = NEW.id AND name = '';
  INSERT INTO outbox (seq, kind, ref) SELECT last_seq, 'class', NEW.id FROM outbox_state;
END;
CREATE TRIGGER outbox_class_update AFTER UPDATE OF name, private, created_at, ends_at, ended_at ON classes
WHEN (SELECT enabled FROM outbox_state) BEGIN
  UPDATE outbox_state SET last_seq = last_seq + 1;
  DELETE FROM outbox WHERE kind = 'class' AND ref = NEW.id AND name = '';
  INSERT INTO outbox (seq, kind, ref) SELECT last_seq, 'class', NEW.id FROM outbox_state;
END;
CREATE TRIGGER outbox_group_insert AFTER INSERT ON groups
WHEN (SELECT enabled FROM outbox_state) BEGIN
  UPDATE outbox_state SET last_seq = last_seq + 1;
  DELETE FROM outbox WHERE kind = 'group' AND ref = NEW.class_id AND name = NEW.name;
  INSERT INTO outbox (seq, kind, ref, name) SELECT last_seq, 'group', NEW.class_id, NEW.name FROM outbox_state;
END;
