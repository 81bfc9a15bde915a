-- Version 3: the fluid (SPH) and gravity (N-body) scenes report their own measurements: the
-- water height at the dam-break's left wall, energies, the N-body energy drift from t = 0, the
-- angular momentum and the virial ratio 2K/|W|. NULL where a scene does not report one.
ALTER TABLE samples ADD COLUMN height REAL;
ALTER TABLE samples ADD COLUMN kinetic REAL;
ALTER TABLE samples ADD COLUMN potential REAL;
ALTER TABLE samples ADD COLUMN energy REAL;
ALTER TABLE samples ADD COLUMN energy_drift REAL;
ALTER TABLE samples ADD COLUMN angular_momentum REAL;
ALTER TABLE samples ADD COLUMN virial REAL;
