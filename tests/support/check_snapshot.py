#!/usr/bin/python3
# Reads a snapshot pair (CSV and legacy VTK, issue 19) back as a student would, with Debian's
# python3-vtk9 and the csv module, and checks it against the engine: the particles' positions,
# velocities and spins, hashed in file order as grn_world_digest hashes them, give the engine's
# digest bit for bit; the counts and every value agree between the two files.
# Usage: check_snapshot.py FILE.csv FILE.vtk DIGEST_HEX GRAINS [CONTACTS]
# (CONTACTS: the engine's count of touching pairs, when the caller knows it). Exit 0 when all hold.
import csv
import struct
import sys

import vtk
from vtk.util.numpy_support import vtk_to_numpy

csv_path, vtk_path, digest_hex, grains = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
contacts = int(sys.argv[5]) if len(sys.argv) > 5 else None
failed = 0


def check(name, cond, detail=''):
    global failed
    print(f"{'ok  ' if cond else 'FAIL'} {name}{': ' + detail if detail else ''}")
    if not cond:
        failed += 1


def fnv1a(rows):
    """grn_world_digest: FNV-1a 64 over each particle's position, velocity and spin bits."""
    h = 0xcbf29ce484222325
    for pos, vel, spin in rows:
        for b in struct.pack('<9d', *pos, *vel, *spin):
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


with open(csv_path, newline='') as f:
    table = list(csv.DictReader(f))
want_cols = ['id', 'x_m', 'y_m', 'z_m', 'radius_m', 'vx_m_s', 'vy_m_s', 'vz_m_s', 'wx_rad_s',
             'wy_rad_s', 'wz_rad_s', 'contacts']
check('CSV columns', list(table[0].keys()) == want_cols if table else False, ','.join(want_cols))
check('CSV: one row per particle', len(table) == grains, f'{len(table)} rows, engine {grains}')
rows = [((float(r['x_m']), float(r['y_m']), float(r['z_m'])),
         (float(r['vx_m_s']), float(r['vy_m_s']), float(r['vz_m_s'])),
         (float(r['wx_rad_s']), float(r['wy_rad_s']), float(r['wz_rad_s']))) for r in table]
got = f'{fnv1a(rows):016x}'
check("CSV values hash to the engine's digest", got == digest_hex, f'{got} vs {digest_hex}')
ends = sum(int(r['contacts']) for r in table)
check('CSV contact counts pair up', ends % 2 == 0, f'{ends} ends')
if contacts is not None:
    check("CSV: the engine's touching pairs", ends // 2 == contacts, f'{ends // 2} vs {contacts}')

reader = vtk.vtkPolyDataReader()
reader.SetFileName(vtk_path)
reader.ReadAllScalarsOn()  # as ParaView does: every array, not only the first of each kind
reader.ReadAllVectorsOn()
reader.Update()
poly = reader.GetOutput()
check('VTK is polydata', reader.IsFilePolyData() == 1)
check('VTK: one point per particle', poly.GetNumberOfPoints() == grains,
      f'{poly.GetNumberOfPoints()} vs {grains}')
pd = poly.GetPointData()
arrays = {pd.GetArrayName(k): vtk_to_numpy(pd.GetArray(k)) for k in range(pd.GetNumberOfArrays())}
check('VTK point data: radius, id, velocity, spin',
      set(arrays) == {'radius', 'id', 'velocity', 'spin'}, ','.join(sorted(arrays)))
pts = vtk_to_numpy(poly.GetPoints().GetData()) if grains > 0 else []
vrows = [(tuple(pts[i]), tuple(arrays['velocity'][i]), tuple(arrays['spin'][i]))
         for i in range(grains)]
got = f'{fnv1a(vrows):016x}'
check("VTK values hash to the engine's digest", got == digest_hex, f'{got} vs {digest_hex}')
same = all(float(table[i]['radius_m']) == arrays['radius'][i] and
           int(table[i]['id']) == arrays['id'][i] for i in range(grains))
check('VTK radius and id = CSV row by row', same)
lines = poly.GetLines()
nlines = poly.GetNumberOfLines()
check('VTK: a line per touching pair, CSV counts them', nlines == ends // 2,
      f'{nlines} lines, CSV {ends // 2}')
cd = poly.GetCellData()
fn = cd.GetArray('normal_force')
if nlines > 0:
    fns = vtk_to_numpy(fn)
    check('VTK normal force per line, all > 0', len(fns) == nlines and bool((fns > 0).all()),
          f'{len(fns)} values, min {fns.min():.4g} N')
    # each line's two points are in contact: their centres are within the sum of the radii
    # (plus the engine's reach for a liquid bridge, at most 10 % of a radius here)
    ids = vtk.vtkIdList()
    lines.InitTraversal()
    worst = 0.0
    per = [0] * grains
    while lines.GetNextCell(ids):
        a, b = ids.GetId(0), ids.GetId(1)
        per[a] += 1
        per[b] += 1
        d = sum((pts[a][k] - pts[b][k]) ** 2 for k in range(3)) ** 0.5
        worst = max(worst, d / (arrays['radius'][a] + arrays['radius'][b]))
    check('VTK lines join touching particles (distance / radii sum)', worst <= 1.1, f'{worst:.4f}')
    check("VTK lines' ends = CSV contacts per row", per == [int(r['contacts']) for r in table])
else:
    check('VTK: no lines, no normal force', fn is None)
sys.exit(1 if failed else 0)
