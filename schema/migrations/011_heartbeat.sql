-- Version 11 (issue 32): the store's last sign of life, written with every batch the daemon
-- commits. Runs a crash (kill -9, a power cut) left open end at that time when the daemon starts
-- again, at their last sample, with that sample's measurements as their results; before, they
-- ended at the restart, with neither an end time in the simulation nor results.
CREATE TABLE heartbeat (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  at REAL NOT NULL
) STRICT;
