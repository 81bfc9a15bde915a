-- Version 5 (issue 16): private sessions' runs stay private, and a run says what it lost.
-- sessions keep the SHA-256 (lower-case hex) of their control and viewer tokens, never the tokens:
-- a private session's runs are read with either token, also after the session has ended. NULL: no
-- such token (a public session has no viewer token; sessions recorded before version 5 have
-- neither, so their private runs are the admin's to read).
-- runs count the events and samples they did not record (store.h: STORE_RUN_EVENTS_MAX events per
-- run; samples and events dropped while STORE_QUEUE_MAX records waited for a slow or full disk).
-- A run with events_dropped > 0 cannot be replayed faithfully, and grainlabd refuses to.
ALTER TABLE sessions ADD COLUMN control_hash TEXT CHECK (length(control_hash) = 64);
ALTER TABLE sessions ADD COLUMN viewer_hash TEXT CHECK (length(viewer_hash) = 64);
ALTER TABLE runs ADD COLUMN events_dropped INTEGER NOT NULL DEFAULT 0 CHECK (events_dropped >= 0);
ALTER TABLE runs ADD COLUMN samples_dropped INTEGER NOT NULL DEFAULT 0 CHECK (samples_dropped >= 0);
