-- Version 2 (issue 30, the store's migration 010): a run's stretches of constant parameters with
-- their results (segments, a JSON array), the run a Reset started it from (reset_of, on the same
-- node), and the engine state version that recorded it.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS reset_of bigint;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS state_version integer;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS segments text;
