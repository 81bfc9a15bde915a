// A first class as its people meet it (issue 31), in Debian's chromium against a real grainlabd
// started as the README starts it (no token configured: the daemon's own teacher link). The
// teacher makes a class at /teach on a desktop and opens the dashboard, whose QR code must decode
// to the join address; a student joins on a phone (390×844, touch) and lands on the group's
// experiment; every page is then checked at phone and tablet (768×1024) sizes for horizontal
// overflow, a 3D view that uses the width and controls within reach, and with axe-core for
// critical and serious violations; a Japanese browser gets Japanese, and the switch sticks.
// Usage: node test_lesson.mjs GRAINLABD WEB_CLIENT_DIR SCREENSHOT_DIR
import { mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { checks, launchChromium, startDaemon, until as poll } from '../support/daemon.mjs';

const [daemon, client, shots] = process.argv.slice(2).map((p) => resolve(p));
const slow = Number(process.env.GRAINLAB_TIMEOUT_MULTIPLIER || 1);
const { ok, counts } = checks();
const until = (what, fn, ms = 30000) => poll(what, fn, ms, { every: 250, slow });
const require = createRequire(join(client, 'package.json'));
const axePath = require.resolve('axe-core/axe.min.js');
const jsqrPath = require.resolve('jsqr/dist/jsQR.js');

mkdirSync(shots, { recursive: true });
const { proc, base, tmp, teacherLink } = await startDaemon(daemon, client, [], 'grainlab-lesson-');
const browser = await launchChromium(client);
const errors = [];
const watch = (page, who) => {
  page.on('pageerror', (e) => errors.push(`${who}: ${e.message}`));
  page.on('response', (r) => { if (r.status() >= 500) errors.push(`${who}: ${r.status()} ${r.url()}`); });
};
// bypassCSP: axe-core and jsQR are injected as inline scripts, which the pages' policy forbids
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 1, bypassCSP: true };
const TABLET = { viewport: { width: 768, height: 1024 }, isMobile: true, hasTouch: true, deviceScaleFactor: 1, bypassCSP: true };

// axe-core's critical and serious findings on the page as it stands, one line each
async function axe(page) {
  await page.addScriptTag({ path: axePath });
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter((v) => v.impact === 'critical' || v.impact === 'serious')
      .map((v) => `${v.impact} ${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
  });
}

// what a narrow screen shows: the page's width against the window's, the 3D view's (or the
// dashboard's tiles') width, and any control that lies beyond the right edge
const layout = (page) => page.evaluate(() => {
  // the screen's width: on a phone the layout viewport (innerWidth) grows to fit whatever
  // overflows, so a page 446 px wide on a 390 px phone measured "no overflow" against itself
  const w = document.documentElement.clientWidth;
  const view = document.querySelector('#view canvas') || document.querySelector('#view');
  const cut = [...document.querySelectorAll('button, input, select, a')]
    .filter((e) => e.offsetParent !== null && !e.closest('.scroll'))
    .filter((e) => { const b = e.getBoundingClientRect(); return b.width > 0 && (b.right > w + 1 || b.left < -1); })
    .map((e) => e.id || e.className || e.tagName);
  return { w, scroll: document.documentElement.scrollWidth, view: view ? Math.round(view.getBoundingClientRect().width) : null, cut };
});

try {
  ok('grainlabd prints a teacher link out of the box', /\/teach#token=[0-9a-f]{32,}$/.test(teacherLink || ''), teacherLink);
  const desk = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: 'en-GB', bypassCSP: true });
  const phone = await browser.newContext({ ...PHONE, locale: 'en-GB' });
  const tablet = await browser.newContext({ ...TABLET, locale: 'en-GB' });

  // ---- the teacher: /teach, silo first with its smallest quality --------------------------------
  const teach = await desk.newPage();
  watch(teach, 'teach');
  await teach.goto(teacherLink);
  await teach.waitForSelector('#scenes input');
  await teach.fill('#name', 'Physics 3B');
  await teach.selectOption('#first', 'silo');
  await teach.click('details[data-scene="silo"] summary');
  const qualities = await teach.$$eval('#set-silo-quality option', (os) => os.map((o) => o.textContent));
  ok('the quality choice says how many grains each gives', qualities.length === 3 && qualities.every((q) => /\d+/.test(q)), qualities.join(' | '));
  await teach.selectOption('#set-silo-quality', '0');
  ok('/teach asks whether groups start from the same settled grains, the same by default',
     await teach.inputValue('#seeds') === 'shared' &&
     (await teach.$$eval('#seeds option', (os) => os.map((o) => o.value))).join() === 'shared,own');
  await teach.selectOption('#seeds', 'own');
  // a number out of its range is named with its range, its field marked, nothing made
  const refusal = async (id, value) => {
    const before = await teach.inputValue(id);
    await teach.fill(id, value);
    await teach.click('#start');
    const said = { text: await teach.textContent('#error'), marked: await teach.getAttribute(id, 'aria-invalid'), made: await teach.isVisible('#made') };
    await teach.fill(id, before);
    return said;
  };
  const groups0 = await refusal('#groups', '0');
  ok('/teach: 0 groups is refused with the range allowed, the field marked',
     /\b1\b.*\b200\b/.test(groups0.text) && /groups/i.test(groups0.text) && groups0.marked === 'true' && !groups0.made, JSON.stringify(groups0));
  // the largest group the server takes comes from it (GET /api/config: max-grains, 20000 here)
  const budget = await refusal('#budget', '99999999');
  ok('/teach: grains beyond the server\'s limit are refused with that limit',
     /\b1\b.*\b20000\b/.test(budget.text) && budget.marked === 'true' && !budget.made, JSON.stringify(budget));
  const amount = await refusal('#set-silo-amount', '500');
  ok('/teach: a silo of 500 % of the grains is refused with its setting\'s range',
     /amount of grains/.test(amount.text) && /\b10\b.*\b400\b/.test(amount.text) && amount.marked === 'true' && !amount.made, JSON.stringify(amount));
  const teachAxe = await axe(teach);
  ok('axe-core: /teach has no critical or serious violation', teachAxe.length === 0, teachAxe.join('; '));
  await teach.click('#start');
  await teach.waitForSelector('#made:not([hidden])');
  const code = (await teach.textContent('#code')).trim();
  const dashboard = base + new URL(await teach.getAttribute('#dashboard', 'href'), base).pathname +
                    new URL(await teach.getAttribute('#dashboard', 'href'), base).hash;
  ok('the class is made from the form, no token typed', /^[A-Z0-9]{6}$/.test(code), code);
  {
    const link = new URL(await teach.getAttribute('#dashboard', 'href'), base);
    const made = await (await fetch(`${base}/api/classes/${link.pathname.split('/')[2]}`, {
      headers: { Authorization: `Bearer ${new URLSearchParams(link.hash.slice(1)).get('teacher')}` },
    })).json();
    ok('the groups of a class made with "a start of their own" get seeds of their own', made.seeds === 'own', made.seeds);
  }
  await teach.screenshot({ path: join(shots, 'lesson-teach.png'), fullPage: true });

  // ---- the dashboard: the join address and code, and a QR code that decodes to them ------------
  const dash = await desk.newPage();
  watch(dash, 'dashboard');
  await dash.goto(dashboard);
  await dash.waitForSelector('#teacher:not([hidden])');
  await until('the QR code', async () => (await dash.locator('#qr svg').count()) > 0);
  await dash.addScriptTag({ path: jsqrPath });
  const decoded = await dash.evaluate(async () => {
    const svg = document.querySelector('#qr svg');
    const img = new Image();
    img.src = 'data:image/svg+xml;base64,' + btoa(new XMLSerializer().serializeToString(svg));
    await img.decode();
    const c = document.createElement('canvas');
    c.width = c.height = 400;
    const g = c.getContext('2d');
    g.fillStyle = '#fff';
    g.fillRect(0, 0, 400, 400);
    g.drawImage(img, 0, 0, 400, 400);
    const d = g.getImageData(0, 0, 400, 400);
    const r = window.jsQR(d.data, 400, 400);
    return r ? r.data : null;
  });
  const address = (await dash.textContent('#join-address')).trim();
  ok('the dashboard\'s QR code decodes to the join address with the code', decoded === `${address}?code=${code}` &&
     address === `${base}/join`, `${decoded} (shown: ${address})`);
  ok('the empty dashboard says what to do', !(await dash.isHidden('#no-groups')), await dash.textContent('#no-groups'));
  const dashAxe = await axe(dash);
  ok('axe-core: the dashboard has no critical or serious violation', dashAxe.length === 0, dashAxe.join('; '));

  // ---- a student on a phone joins and lands on the experiment ----------------------------------
  const student = await phone.newPage();
  watch(student, 'student');
  await student.goto(`${base}/join`);
  await student.fill('#code', code.toLowerCase());
  await until('the class named', async () => !(await student.isHidden('#class-name')));
  ok('/join names the class once the code is typed, and asks no scene of a class that starts in one place',
     (await student.textContent('#class-name')).includes('Physics 3B'), await student.textContent('#class-name'));
  const joinAxe = await axe(student);
  ok('axe-core: /join has no critical or serious violation', joinAxe.length === 0, joinAxe.join('; '));
  await student.fill('#group', 'Axe team');
  await student.click('#join button');
  await student.waitForURL(/\/s\/[0-9a-f]{16}#/);
  const sessionUrl = student.url();
  await until('the 3D view', async () => (await student.locator('#view canvas').count()) > 0);
  await until('the class bar', async () => (await student.textContent('#class-where')).includes('Axe team'));
  const alt = await until('the view\'s text alternative', async () => {
    const a = await student.getAttribute('#view', 'aria-label');
    return a && /\d/.test(a) ? a : null;
  });
  ok('the 3D view has a text alternative that gives the live key measurement', /flow out|mass|kg/.test(alt), alt);
  await student.screenshot({ path: join(shots, 'lesson-session-phone.png'), fullPage: true });

  // ---- every page at phone and tablet sizes -----------------------------------------------------
  const klassId = new URLSearchParams(new URL(sessionUrl).hash.slice(1)).get('class');
  const pages = [
    ['landing', `${base}/`], ['join', `${base}/join`], ['teach', teacherLink], ['results', `${base}/results`],
    ['session', sessionUrl], ['dashboard', dashboard], ['student class page', `${base}/class/${klassId}#group=Axe+team`],
  ];
  for (const [size, ctx] of [['phone', phone], ['tablet', tablet]]) {
    for (const [name, url] of pages) {
      const p = await ctx.newPage();
      watch(p, `${name} (${size})`);
      await p.goto(url);
      await p.waitForLoadState('networkidle').catch(() => {});
      if (name === 'session') await until('the 3D view', async () => (await p.locator('#view canvas').count()) > 0);
      const l = await layout(p);
      const wide = name !== 'session' || l.view >= l.w - 40;
      ok(`${name} at ${size} size (${l.w} px): no horizontal overflow, controls within reach${name === 'session' ? ', the 3D view across the width' : ''}`,
         l.scroll <= l.w && l.cut.length === 0 && wide, `page ${l.scroll} px, view ${l.view} px, cut: ${l.cut.join(' ')}`);
      if (size === 'phone') { // a tab of its own among a teacher's many, and no 404 per page for /favicon.ico
        const icon = await p.evaluate(() => document.querySelector('link[rel="icon"]')?.href || null);
        const got = icon ? await fetch(icon) : null;
        ok(`${name}: a tab icon that loads`, !!got && got.status === 200 && got.headers.get('content-type') === 'image/svg+xml',
           `${icon}: ${got ? got.status : '-'}`);
      }
      // teach, the dashboard and join were checked above, as their people use them
      if (size === 'phone' && !['join', 'teach', 'dashboard'].includes(name)) {
        const found = await axe(p);
        ok(`axe-core: ${name} has no critical or serious violation`, found.length === 0, found.join('; '));
      }
      await p.screenshot({ path: join(shots, `lesson-${name.replace(/ /g, '-')}-${size}.png`), fullPage: true });
      await p.close();
    }
  }

  // ---- the dashboard's tile says a group's state once: "at rest", not "at rest (at rest)" ---------
  const sid = new URL(sessionUrl).pathname.split('/').pop();
  await until('the group\'s grains at rest', async () => (await (await fetch(`${base}/api/sessions/${sid}`)).json()).state === 'asleep', 120000);
  const tileState = await until('the tile at rest', async () => {
    const s = await dash.textContent('.tile-stats span');
    return /at rest/.test(s) ? s : null;
  });
  ok('a tile at rest says so once', (tileState.match(/at rest/g) || []).length === 1, tileState);

  // ---- a Japanese browser gets Japanese; the switch to English sticks ---------------------------
  const ja = await browser.newContext({ ...PHONE, locale: 'ja-JP' });
  const jp = await ja.newPage();
  watch(jp, 'ja');
  await jp.goto(`${base}/join`);
  await jp.waitForSelector('select.lang');
  const jaText = await jp.evaluate(() => ({ lang: document.documentElement.lang, text: document.body.innerText }));
  ok('a browser set to Japanese gets the pages in Japanese', jaText.lang === 'ja' && /[\u3040-\u30ff]/.test(jaText.text), jaText.text.slice(0, 80));
  await jp.selectOption('select.lang', 'en');
  await until('English', async () => (await jp.evaluate(() => document.documentElement.lang)) === 'en');
  await jp.goto(`${base}/`);
  await jp.waitForSelector('select.lang');
  const after = await jp.evaluate(() => ({ lang: document.documentElement.lang, text: document.body.innerText }));
  ok('the switch to English holds on the next page', after.lang === 'en' && !/[\u3040-\u30ff]/.test(after.text.replace(/日本語/g, '')), after.text.slice(0, 80));
  await ja.close();
  ok('no script errors or server faults on any page', errors.length === 0, errors.join('; '));
} catch (e) {
  ok('the lesson test ran to its end', false, e.stack);
} finally {
  await browser.close();
  proc.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}
const { passed, failed } = counts();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
