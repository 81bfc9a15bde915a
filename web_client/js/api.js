// The REST API from the browser: JSON in and out, errors shown to the user, never swallowed.
export function showError(message) {
  const box = document.getElementById('error');
  if (!box) return;
  box.textContent = message;
  box.style.display = 'block';
  clearTimeout(showError.timer);
  showError.timer = setTimeout(() => { box.style.display = 'none'; }, 8000);
}

// A message that no longer holds (the thing it refused has since worked) leaves the screen.
export function clearError() {
  const box = document.getElementById('error');
  if (box) box.style.display = 'none';
  clearTimeout(showError.timer);
}

export async function api(method, path, body, token) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers['Authorization'] = 'Bearer ' + token;
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    showError(`${method} ${path}: the server cannot be reached (${e.message})`);
    throw e;
  }
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* not JSON: reported below */ }
  if (!response.ok) {
    const err = json && json.error;
    const message = err ? `${err.message}${err.field ? ` (${err.field})` : ''}` : `${response.status} ${text.slice(0, 200)}`;
    showError(message);
    const e = new Error(message);
    e.status = response.status;
    e.code = err && err.code;
    throw e;
  }
  return json;
}

// A file from the API saved by the browser: fetched with the token (a private session's needs
// its header, which a plain link cannot carry), named as the server's Content-Disposition says.
export async function download(path, token, fallbackName) {
  const headers = token ? { Authorization: 'Bearer ' + token } : {};
  let response;
  try {
    response = await fetch(path, { headers });
  } catch (e) {
    showError(`GET ${path}: the server cannot be reached (${e.message})`);
    throw e;
  }
  if (!response.ok) {
    const text = await response.text();
    let err = null;
    try { err = JSON.parse(text).error; } catch { /* not JSON: shown as it is */ }
    const message = err ? err.message : `${response.status} ${text.slice(0, 200)}`;
    showError(message);
    throw new Error(message);
  }
  const named = /filename="([^"]+)"/.exec(response.headers.get('Content-Disposition') || '');
  const url = URL.createObjectURL(await response.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = named ? named[1] : fallbackName;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
  return a.download;
}

export function fmt(v, digits = 3) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  if (typeof v !== 'number') return String(v);
  return Math.abs(v) >= 1000 ? v.toFixed(0) : v.toPrecision(digits);
}

// What each scene shows a class, for the landing page's cards.
export const sceneText = {
  pour: 'Sand poured from a spout builds a cone: its slope settles at the angle of repose, set by friction and rolling resistance.',
  wet: 'Damp sand: liquid bridges between grains hold steeper slopes than dry sand can.',
  chains: 'Inside a pile the weight is carried by a few chains of strongly pressed grains: see them in a cut through the pile.',
  slump: 'A dam holds a column of grains; pull it away and watch the column collapse and run out.',
  tilt: 'A box of grains tilted slowly: the surface holds until it fails in an avalanche at the angle of repose.',
  silo: 'A silo draining through a hole: the flow stays constant however full the silo is (Beverloo), and small holes jam.',
  dambreak: 'A water column released against the wall of a tank: the surge front races along the floor while the column drops (SPH water).',
  drop: 'A ball of water falls into a pool and splashes: watch the energy turn from potential to kinetic and be damped away.',
  orbit: 'Two bodies in orbit under gravity: a circle, or an ellipse at other speeds; energy and angular momentum are conserved.',
  softening: 'Two bodies pass close: the softening length decides how hard they swing round each other.',
  cluster: 'A star cluster of many bodies in balance: kinetic and potential energy keep the virial ratio 2K/|W| near 1.',
};
