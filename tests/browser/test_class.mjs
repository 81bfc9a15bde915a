// Class mode in the browser (issue 17): the real daemon, Debian's chromium driven by
// playwright-core. A teacher creates a class and opens the dashboard; three students join from
// /join, each group opens its silo with a different hole; the teacher sees three live tiles and
// three points on the Beverloo plot, pushes mu to every group, spotlights one (the other
// students are offered it), ends the class and downloads its CSV.
// Usage: node test_class.mjs GRAINLABD WEB_CLIENT_DIR SCREENSHOT_DIR
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { checks, launchChromium, startDaemon, until as poll } from '../support/daemon.mjs';

const [daemon, client, shots] = process.argv.slice(2).map((p) => resolve(p));
const slow = Number(process.env.GRAINLAB_TIMEOUT_MULTIPLIER || 1);
const { ok, counts } = checks();
const until = (what, fn, ms = 30000) => poll(what, fn, ms, { every: 250, slow });

mkdirSync(shots, { recursive: true });
const admin = 'class-test-admin-token-0123456789';
// every page and request comes from 127.0.0.1: the per-client limits are lifted (test_limits.sh tests them)
const { proc, base, tmp } = await startDaemon(daemon, client, (dir) => {
  writeFileSync(join(dir, 'admin'), admin);
  return ['--admin-token-file', join(dir, 'admin'),
          '--max-sessions-per-client', '10000', '--create-rate', '100000', '--join-guess-rate', '100000',
          '--max-connections-per-ip', '10000'];
}, 'grainlab-class-');
const call = async (method, path, body, token) => {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  const r = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: r.status, json: await r.json().catch(() => null) };
};
const browser = await launchChromium(client);
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const errors = [];
  const watch = (page, who) => page.on('pageerror', (e) => errors.push(`${who}: ${e.message}`));

  // ---- the teacher creates a class and opens the dashboard -------------------------------------
  const ends = new Date(Date.now() + 3600e3).toISOString().replace(/\.\d+Z$/, 'Z');
  const created = await call('POST', '/api/classes', { name: 'Physics 3B', scenes: ['silo', 'pour'], max_groups: 30, grain_budget: 4000,
                                                       defaults: { silo: { amount: 50 } }, ends_at: ends }, admin);
  ok('the class is created', created.status === 201, `${created.status}`);
  const klass = created.json;
  const teacher = await context.newPage();
  watch(teacher, 'teacher');
  await teacher.goto(`${base}/class/${klass.id}#teacher=${klass.teacher_token}`);
  await teacher.waitForSelector('#teacher:not([hidden])');
  ok('the dashboard shows the class code to read out', (await teacher.textContent('#code')) === klass.code, klass.code);

  // ---- three students join, each group's silo gets its own hole -------------------------------
  const holes = [0.7, 0.9, 1.1];
  const students = [];
  for (let i = 0; i < 3; i++) {
    const page = await context.newPage();
    watch(page, `team ${i + 1}`);
    await page.goto(`${base}/join?code=${klass.code}`);
    await page.fill('#group', `team ${i + 1}`);
    await until('the scene choice', async () => (await page.locator('#scene option[value="silo"], #scene option:text-is("silo")').count()) > 0);
    await page.selectOption('#scene', 'silo');
    await page.click('#join button');
    await page.waitForURL(/\/class\/[0-9a-f]+#group=/);
    const f = new URLSearchParams(new URL(page.url()).hash.slice(1));
    ok(`team ${i + 1} lands on the student page as its controller`, f.get('group') === `team ${i + 1}` && /^[0-9a-f]{64}$/.test(f.get('control') || ''));
    await page.waitForSelector('#session-link[href]');
    const sid = (await page.getAttribute('#session-link', 'href')).match(/\/s\/([0-9a-f]{16})/)[1];
    const set = await call('PATCH', `/api/sessions/${sid}/params`, { hole: holes[i] }, f.get('control'));
    ok(`team ${i + 1}'s silo: hole ${holes[i]} m`, set.status === 200, `${set.status}`);
    students.push({ page, sid, token: f.get('control') });
  }
  const wrong = await context.newPage();
  watch(wrong, 'wrong code');
  await wrong.goto(`${base}/join`);
  await wrong.fill('#code', 'ZZZZZZ');
  await wrong.fill('#group', 'team 9');
  await wrong.click('#join button');
  await wrong.waitForSelector('#refusal:not([hidden])');
  ok('a wrong code: the API\'s refusal shown', (await wrong.getAttribute('#refusal', 'data-code')) === 'no_class', await wrong.textContent('#refusal'));
  await wrong.close();

  // ---- three live tiles -----------------------------------------------------------------------
  await until('three tiles', async () => Number(await teacher.evaluate(() => document.body.dataset.tiles)) === 3);
  await until('frames on every tile', async () => (await teacher.$$eval('.tile', (ts) => ts.map((t) => Number(t.dataset.frames || 0)))).every((n) => n >= 5), 60000);
  const drawn = await teacher.$$eval('.tile canvas', (cs) => cs.map((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] > 150 && d[i + 1] > 120) n++; // sand-coloured pixels
    return n;
  }));
  ok('every tile draws its grains', drawn.every((n) => n > 50), drawn.join(', '));

  // ---- the holes open: three live points on the Beverloo plot ---------------------------------
  for (const s of students) {
    await until('the silo settled', async () => (await call('GET', `/api/sessions/${s.sid}`)).json.measurements.state !== 'settling', 120000);
    await call('POST', `/api/sessions/${s.sid}/actions`, { type: 'open_hole' }, s.token);
  }
  await until('three points', async () => Number(await teacher.evaluate(() => document.getElementById('results').dataset.points)) === 3, 60000);
  ok('three points on the Beverloo plot', true, await teacher.textContent('.cr-title'));
  ok('the Beverloo curve over the whole hole range', Number(await teacher.evaluate(() => document.getElementById('results').dataset.curve)) === 120);
  await teacher.screenshot({ path: join(shots, 'class-teacher.png'), fullPage: true });

  // ---- push mu to every group -----------------------------------------------------------------
  await teacher.selectOption('#push-scene', 'silo');
  await teacher.selectOption('#push-param', 'mu');
  await teacher.fill('#push-value', '0.7');
  await teacher.click('#push button');
  await until('the push report', async () => (await teacher.getAttribute('#report', 'data-applied')) === '3');
  ok('mu pushed: applied by all three groups', true, await teacher.textContent('#report'));
  const mus = await Promise.all(students.map(async (s) => (await call('GET', `/api/sessions/${s.sid}`)).json.params.mu));
  ok('every group\'s session has mu 0.7', mus.every((m) => m === 0.7), mus.join(', '));

  // ---- spotlight team 2: team 1 is offered it -------------------------------------------------
  await teacher.locator('.tile[data-group="team 2"] .spot').click();
  await until('the offer', async () => !(await students[0].page.locator('#offer').isHidden()) &&
    (await students[0].page.textContent('#offer')).includes('team 2'), 15000);
  const watchLink = await students[0].page.getAttribute('#offer a', 'href');
  ok('team 1 is offered to watch team 2', watchLink.startsWith(`/s/${students[1].sid}`), watchLink);
  await students[0].page.screenshot({ path: join(shots, 'class-student.png'), fullPage: true });

  // ---- the end: every run finished, the CSV ---------------------------------------------------
  teacher.once('dialog', (d) => d.accept());
  await teacher.click('#end');
  await until('the class ended', async () => (await teacher.textContent('#state')).startsWith('ended'));
  await until('the tiles gone', async () => Number(await teacher.evaluate(() => document.body.dataset.tiles)) === 0);
  const finished = await until('three finished runs', async () => {
    const rows = await teacher.$$eval('.cr-rows tr', (rs) => rs.map((r) => r.textContent));
    return rows.filter((r) => r.includes('finished')).length === 3 ? rows : null;
  }, 20000);
  ok('three finished runs, each at its own hole with the pushed mu',
     ['hole 0.700', 'hole 0.900', 'hole 1.10'].every((h) => finished.some((r) => r.includes(h))) && finished.every((r) => r.includes('mu 0.700')),
     finished.join(' | '));
  const [download] = await Promise.all([teacher.waitForEvent('download'), teacher.click('.cr-csv')]);
  const csv = readFileSync(await download.path(), 'utf8').trim().split('\n');
  ok('the class CSV: a header and three runs', csv.length === 4 && csv[0].includes('result.mean_flow'), csv[0]);
  await teacher.screenshot({ path: join(shots, 'class-ended.png'), fullPage: true });
  ok('no script errors on the class pages', errors.length === 0, errors.join('; '));
} catch (e) {
  ok('the class test ran to its end', false, e.message);
} finally {
  await browser.close();
  proc.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}
const { passed, failed } = counts();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
