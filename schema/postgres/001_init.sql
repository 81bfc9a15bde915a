-- The cluster's results database (issue 20), version 1: what GET /api/runs reads, gathered from
-- every node's SQLite store (schema/migrations) by its shipper. Each row carries the node it
-- came from, and (node, id) is its key: run ids are each node's own integers. Only what the runs
-- listing filters on and shows is here; events and samples stay on their node (GET
-- /api/runs/{node}-{id} is answered there), and so do tokens and their hashes.
-- grainlabd applies these files in order on connecting, each once (grainlab_schema), under an
-- advisory lock so that nodes starting together do not race; IF NOT EXISTS keeps a file
-- harmless when run by hand again. Times are Unix seconds, as in the store.

-- One SQLite store per node id: a second store claiming the same id (a copied data dir, two
-- nodes given one --node) is refused rather than let its run ids overwrite the first one's.
CREATE TABLE IF NOT EXISTS nodes (
  node text PRIMARY KEY,
  instance text NOT NULL,
  first_shipped_at double precision NOT NULL,
  last_shipped_at double precision NOT NULL
);

CREATE TABLE IF NOT EXISTS sessions (
  node text NOT NULL,
  id text NOT NULL,
  private boolean NOT NULL,
  created_at double precision NOT NULL,
  ended_at double precision,
  PRIMARY KEY (node, id)
);

CREATE TABLE IF NOT EXISTS runs (
  node text NOT NULL,
  id bigint NOT NULL,
  session_id text NOT NULL,
  label text NOT NULL,
  scene text NOT NULL,
  seed bigint NOT NULL,
  grains integer NOT NULL,
  engine_version text NOT NULL,
  params text NOT NULL, -- the start parameters as the store keeps them (a JSON object)
  started_at double precision NOT NULL,
  ended_at double precision,
  end_reason text,
  end_steps bigint,
  end_t double precision,
  digest text,
  events_dropped bigint NOT NULL DEFAULT 0,
  samples_dropped bigint NOT NULL DEFAULT 0,
  class_id text,
  group_name text,
  sample_steps bigint NOT NULL,
  PRIMARY KEY (node, id)
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at);
CREATE INDEX IF NOT EXISTS runs_scene_started ON runs (scene, started_at);
CREATE INDEX IF NOT EXISTS runs_label ON runs (label);
CREATE INDEX IF NOT EXISTS runs_session ON runs (session_id);
CREATE INDEX IF NOT EXISTS runs_class ON runs (class_id, started_at) WHERE class_id IS NOT NULL;

-- the start parameters and final results one row each, so a range filter is an index lookup
CREATE TABLE IF NOT EXISTS run_params (
  node text NOT NULL,
  run_id bigint NOT NULL,
  name text NOT NULL,
  value double precision NOT NULL,
  PRIMARY KEY (node, run_id, name)
);
CREATE INDEX IF NOT EXISTS run_params_value ON run_params (name, value);

CREATE TABLE IF NOT EXISTS run_results (
  node text NOT NULL,
  run_id bigint NOT NULL,
  name text NOT NULL,
  value double precision NOT NULL,
  PRIMARY KEY (node, run_id, name)
);
CREATE INDEX IF NOT EXISTS run_results_value ON run_results (name, value);

-- classes without their code (it admits students) or teacher token hash
CREATE TABLE IF NOT EXISTS classes (
  node text NOT NULL,
  id text NOT NULL,
  name text NOT NULL,
  private boolean NOT NULL,
  created_at double precision NOT NULL,
  ends_at double precision NOT NULL,
  ended_at double precision,
  PRIMARY KEY (node, id)
);
CREATE INDEX IF NOT EXISTS classes_id ON classes (id);

CREATE TABLE IF NOT EXISTS groups (
  node text NOT NULL,
  class_id text NOT NULL,
  name text NOT NULL,
  created_at double precision NOT NULL,
  PRIMARY KEY (node, class_id, name)
);
