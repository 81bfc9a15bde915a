-- Version 7 (issue 17): a class, a teacher's lab for many student groups, and its groups; every
-- run a group's session makes is linked to its class and group, so a class's results are one
-- query and outlive the class. Times are Unix seconds (REAL). Of the teacher's token only its
-- SHA-256 (lower-case hex) is kept, as for sessions (version 5). A class's settings that the
-- teacher changes (locked, spotlight, second_join) are kept so that a restart finds them.
CREATE TABLE classes (
  id TEXT PRIMARY KEY,
  code TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  scenes TEXT NOT NULL CHECK (json_valid(scenes)),     -- JSON array of scene keys
  max_groups INTEGER NOT NULL CHECK (max_groups >= 1),
  grain_budget INTEGER NOT NULL CHECK (grain_budget >= 1),
  defaults TEXT NOT NULL CHECK (json_valid(defaults)), -- {scene: {param: value}}
  private INTEGER NOT NULL CHECK (private IN (0, 1)),
  second_join TEXT NOT NULL CHECK (second_join IN ('viewer', 'controller')),
  locked INTEGER NOT NULL DEFAULT 0 CHECK (locked IN (0, 1)),
  spotlight TEXT,                                       -- a group's name, or NULL
  teacher_hash TEXT NOT NULL CHECK (length(teacher_hash) = 64),
  created_at REAL NOT NULL,
  ends_at REAL NOT NULL,
  ended_at REAL
) STRICT;

CREATE TABLE groups (
  class_id TEXT NOT NULL REFERENCES classes (id),
  name TEXT NOT NULL,
  created_at REAL NOT NULL,
  PRIMARY KEY (class_id, name)
) STRICT, WITHOUT ROWID;

ALTER TABLE runs ADD COLUMN class_id TEXT REFERENCES classes (id);
ALTER TABLE runs ADD COLUMN group_name TEXT CHECK ((group_name IS NULL) = (class_id IS NULL));
CREATE INDEX runs_class ON runs (class_id, started_at) WHERE class_id IS NOT NULL;
