-- Version 4: a sample keeps its measurements in one JSON object, name -> number, instead of a
-- column per measurement, so a new measurement needs no migration. The names are the engine's
-- (grn_measure_name); a measurement the scene does not report, or one that is not finite, is
-- absent. grainlabd writes each number with 17 significant digits, so it reads back exactly; the
-- rows carried over here are printed by SQLite, which is exact too for every magnitude below
-- about 1e200 (far above any measurement).
CREATE TABLE samples_v4 (
  run_id INTEGER NOT NULL REFERENCES runs (id),
  steps INTEGER NOT NULL,
  t REAL NOT NULL,
  state TEXT NOT NULL,
  measures TEXT NOT NULL CHECK (json_valid(measures)),
  PRIMARY KEY (run_id, steps)
) STRICT, WITHOUT ROWID;
INSERT INTO samples_v4 (run_id, steps, t, state, measures)
SELECT run_id, steps, t, state,
       '{' || ltrim(iif(angle IS NULL, '', ',"angle":' || printf('%!.17g', angle))
         || iif(top IS NULL, '', ',"top":' || printf('%!.17g', top))
         || iif(cx IS NULL, '', ',"cx":' || printf('%!.17g', cx))
         || iif(cz IS NULL, '', ',"cz":' || printf('%!.17g', cz))
         || iif(over_max IS NULL, '', ',"over_max":' || printf('%!.17g', over_max))
         || iif(flowing IS NULL, '', ',"flowing":' || printf('%!.17g', flowing))
         || iif(alive IS NULL, '', ',"alive":' || printf('%!.17g', alive))
         || iif(front IS NULL, '', ',"front":' || printf('%!.17g', front))
         || iif(flow IS NULL, '', ',"flow":' || printf('%!.17g', flow))
         || iif(mass_above IS NULL, '', ',"mass_above":' || printf('%!.17g', mass_above))
         || iif(fill IS NULL, '', ',"fill":' || printf('%!.17g', fill))
         || iif(beverloo IS NULL, '', ',"beverloo":' || printf('%!.17g', beverloo))
         || iif(height IS NULL, '', ',"height":' || printf('%!.17g', height))
         || iif(kinetic IS NULL, '', ',"kinetic":' || printf('%!.17g', kinetic))
         || iif(potential IS NULL, '', ',"potential":' || printf('%!.17g', potential))
         || iif(energy IS NULL, '', ',"energy":' || printf('%!.17g', energy))
         || iif(energy_drift IS NULL, '', ',"energy_drift":' || printf('%!.17g', energy_drift))
         || iif(angular_momentum IS NULL, '', ',"angular_momentum":' || printf('%!.17g', angular_momentum))
         || iif(virial IS NULL, '', ',"virial":' || printf('%!.17g', virial)), ',') || '}'
FROM samples;
DROP TABLE samples;
ALTER TABLE samples_v4 RENAME TO samples;
