-- Version 8 (issue 19): each scene samples at its own interval (the catalogue's sample_steps: a
-- dam break every 4 steps, 60 Hz; most scenes every 60, 0.25 s). A run keeps the one it was
-- sampled at, so its samples, plots and exports say how far apart they are; runs recorded before
-- were all sampled every 60 steps.
ALTER TABLE runs ADD COLUMN sample_steps INTEGER NOT NULL DEFAULT 60 CHECK (sample_steps > 0);
