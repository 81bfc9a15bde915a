// The client on a cluster (issue 20), in Debian's chromium: scripts/cluster.sh starts PostgreSQL,
// three nodes and nginx on loopback. The landing page lists every node's sessions; a session
// started from it (placement's 307 followed by the browser) streams through the origin; a
// student joins a class by its node's code; a viewer of a node killed with -9 is told so.
// Usage: node test_cluster_browser.mjs GRAINLABD WEB_CLIENT_DIR
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checks, launchChromium, sleep, until as poll } from '../support/daemon.mjs';

const [daemon, client] = process.argv.slice(2).map((p) => resolve(p));
const slow = Number(process.env.GRAINLAB_TIMEOUT_MULTIPLIER || 1);
const { ok, counts } = checks();
const until = (what, fn, ms = 30000) => poll(what, fn, ms, { every: 250, slow });
const cluster = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'scripts', 'cluster.sh');

// a port free now; `run` of them in a row when asked (cluster.sh gives node k BASE+2k and +1)
const freeAt = (port) => new Promise((res) => {
  const s = createServer().once('error', () => res(false));
  s.listen(port, '127.0.0.1', () => s.close(() => res(true)));
});
async function freeRun(run) {
  for (let i = 0; i < 200; i++) {
    const first = 20000 + Math.floor(Math.random() * 39000);
    let all = true;
    for (let p = first; p < first + run && all; p++) all = await freeAt(p);
    if (all) return first;
  }
  throw new Error(`no ${run} free ports in a row`);
}

const tmp = mkdtempSync(join(tmpdir(), 'grainlab-cluster-browser-'));
execFileSync('chmod', ['711', tmp]); // PostgreSQL runs as its own user under it
const base = await freeRun(6);
const origin = await freeRun(1);
const pg = await freeRun(1);
const env = {
  ...process.env, CLUSTER_DIR: join(tmp, 'cluster'), NODES: '3', ORIGIN_PORT: String(origin),
  BASE_PORT: String(base), PG_PORT: String(pg), BUILD: dirname(daemon),
  NODE_FLAGS: '--max-sessions-per-client 10000 --create-rate 100000 --join-guess-rate 100000 --max-connections-per-ip 10000',
};
const sh = (...args) => execFileSync('bash', [cluster, ...args], { env, encoding: 'utf8' });
const url = `http://127.0.0.1:${origin}`;
const call = async (method, path, body, token) => {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  // fetch follows placement's 307 with the method and body, as a browser does
  const r = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: r.status, json: await r.json().catch(() => null) };
};
const nodeOf = (id) => id.split('-')[0];

const started = sh('start');
// the teacher's way in: the link start prints, on the origin, with the cluster's one token
const teachLink = (started.match(/^teacher: (http:\/\/\S+\/teach#token=[0-9a-f]{32})$/m) || [])[1];
const browser = await launchChromium(client);
try {
  const errors = [];
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const watch = (page, who) => page.on('pageerror', (e) => errors.push(`${who}: ${e.message}`));
  await until('every node hears the others', async () => (await call('GET', '/api/nodes')).json.nodes.length === 3);

  // ---- sessions on every node, listed together on the landing page -----------------------------
  const made = [];
  for (let i = 0; i < 6; i++) made.push((await call('POST', '/api/sessions', { scene: 'pour', params: { quality: 0 } })).json);
  const nodes = new Set(made.map((s) => nodeOf(s.id)));
  ok('six sessions created through the origin land on every node', nodes.size === 3, [...nodes].join(' '));
  const landing = await context.newPage();
  watch(landing, 'landing');
  await landing.goto(url + '/');
  const listed = await until('the landing page lists every node\'s sessions', async () => {
    const hrefs = await landing.$$eval('#sessions a', (as) => as.map((a) => a.getAttribute('href')));
    return made.every((s) => hrefs.includes(`/s/${s.id}`)) ? hrefs : null;
  });
  ok('the landing page lists the sessions of all three nodes', !!listed, `${listed ? listed.length : 0} rows`);

  // ---- a session started from the page streams through the origin ------------------------------
  await landing.click('#scenes .card button');
  await landing.waitForURL(/\/s\/n[0-9]-[0-9a-f]{16}#control=/, { timeout: 30000 * slow });
  const mine = landing.url().match(/\/s\/([^#]+)/)[1];
  const moving = await until('the new session\'s clock moves in the page', async () => {
    const t = Number((await landing.textContent('#badge')).match(/[\d.]+/)[0]);
    return t > 0.5 ? t : null;
  });
  ok('a session started from the landing page runs on its node and streams through the origin', !!moving, `${mine}, t = ${moving}`);

  // ---- a student joins a class with its node's code -------------------------------------------
  ok('cluster.sh start prints the teacher\'s link on the origin', !!teachLink && teachLink.startsWith(`${url}/teach#`), teachLink);
  const teach = await context.newPage();
  watch(teach, 'teach');
  // a slow origin: the teacher presses Start before the form has its scenes and limits (a form
  // with no listener yet reloaded the page, its token gone, and no class was made)
  await teach.route('**/api/config', async (r) => { await sleep(1500); await r.continue(); });
  let creations = 0;
  teach.on('request', (r) => { if (r.method() === 'POST' && new URL(r.url()).pathname === '/api/classes') creations++; });
  await teach.goto(teachLink);
  await teach.fill('#name', 'Physics 3B');
  const early = await teach.evaluate(() => document.getElementById('budget').max === '');
  await teach.dblclick('#start');
  await teach.waitForSelector('#made:not([hidden])', { timeout: 30000 * slow });
  const klass = { code: await teach.textContent('#code'), id: await teach.evaluate(() => document.body.dataset.classId) };
  ok('the teacher link makes a class on a node, no token typed, Start pressed before the form had loaded',
     /^n[0-9]-/.test(klass.code) && early, `${klass.code}, pressed early: ${early}`);
  ok('a double click on Start asks for one class', creations === 1, `${creations} POST /api/classes`);
  const student = await context.newPage();
  watch(student, 'student');
  await student.goto(`${url}/join`);
  // typed as a student might read it aloud: in capitals, with spaces around
  await student.fill('#code', `  ${klass.code.toUpperCase()} `);
  await student.fill('#group', 'team 1');
  await student.click('#join button');
  await student.waitForURL(/\/s\/n[0-9]-[0-9a-f]{16}#/, { timeout: 30000 * slow });
  const landed = new URL(student.url());
  ok('a student joins with the code in capitals and lands on the group\'s experiment, on the class\'s node',
     new URLSearchParams(landed.hash.slice(1)).get('class') === klass.id && nodeOf(landed.pathname.slice(3)) === nodeOf(klass.id),
     `${klass.code}: ${landed.pathname}`);

  // ---- a node dies: its viewer is told -------------------------------------------------------
  const victim = made.find((s) => nodeOf(s.id) !== nodeOf(mine) && nodeOf(s.id) !== nodeOf(klass.id)) ||
                 made.find((s) => nodeOf(s.id) !== nodeOf(mine));
  const viewer = await context.newPage();
  watch(viewer, 'viewer');
  await viewer.goto(`${url}/s/${victim.id}`);
  await until('the viewer\'s clock moves', async () => Number((await viewer.textContent('#badge')).match(/[\d.]+/)[0]) > 0.5);
  const pid = Number(readFileSync(join(env.CLUSTER_DIR, `${nodeOf(victim.id)}.pid`), 'utf8'));
  process.kill(pid, 'SIGKILL');
  const told = await until('the viewer is told', async () => {
    const m = await viewer.textContent('#message');
    const e = await viewer.textContent('#error');
    return /does not answer/.test(m) && /does not answer/.test(e) ? `${m} | ${e}` : null;
  });
  ok(`a viewer of ${nodeOf(victim.id)}'s session is told its node stopped answering`, !!told, told || '');
  const still = Number((await landing.textContent('#badge')).match(/[\d.]+/)[0]);
  const later = await until('the other node\'s session carries on', async () => {
    const t = Number((await landing.textContent('#badge')).match(/[\d.]+/)[0]);
    return t > still + 1 ? t : null;
  });
  ok('the session on another node carries on in its page', later > still + 1, `t ${still} -> ${later}`);
  ok('no page threw', errors.length === 0, errors.join('; '));
} catch (e) {
  ok('the cluster in the browser', false, e.message);
} finally {
  await browser.close();
  try { sh('stop'); } catch (e) { ok('cluster.sh stop', false, e.message); }
  rmSync(tmp, { recursive: true, force: true });
}
const { failed } = counts();
process.exit(failed ? 1 : 0);
