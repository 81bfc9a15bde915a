-- Version 12 (issue 33): whether a class's groups share the seed (the default: their grains settle
-- once for the whole class, every group starting from the same kept settled state) or each group
-- runs with its own (group k, in joining order, seed k). Classes recorded before share it.
ALTER TABLE classes ADD COLUMN seeds TEXT NOT NULL DEFAULT 'shared' CHECK (seeds IN ('shared', 'own'));
