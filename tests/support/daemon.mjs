// What the node tests share: a real grainlabd on loopback ports, Debian's chromium through the
// web client's playwright-core, and the ok/until helpers their checks print with.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ok(name, cond, detail) prints one line per check; counts() says how many passed and failed
export function checks() {
  let passed = 0, failed = 0;
  const ok = (name, cond, detail = '') => {
    console.log(`${cond ? 'ok  ' : 'FAIL'} ${name}${detail !== '' ? ': ' + detail : ''}`);
    cond ? passed++ : failed++;
  };
  return { ok, counts: () => ({ passed, failed }) };
}

// the first truthy value of fn(), polled every `every` ms for up to ms (scaled by `slow`)
export async function until(what, fn, ms = 30000, { every = 200, slow = 1 } = {}) {
  const end = Date.now() + ms * slow;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(every);
  }
}

// grainlabd on ports the kernel picks, its data in a fresh temporary directory, serving the web
// client; resolves once it prints where it listens. args may be a function of that directory
// (to write token files into it first).
export async function startDaemon(daemon, client, args = [], prefix = 'grainlab-test-') {
  const tmp = mkdtempSync(join(tmpdir(), prefix));
  const extra = typeof args === 'function' ? args(tmp) : args;
  const proc = spawn(daemon, ['--http-port', '0', '--ws-port', '0', '--data-dir', join(tmp, 'data'),
                              '--static-dir', client, ...extra],
                     { stdio: ['ignore', 'pipe', 'inherit'] });
  // what it prints: where it listens, then the teacher's link and the students' address
  let out = '';
  const [port, wsPort] = await new Promise((resolve, reject) => {
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening http=(\d+) ws=(\d+)[\s\S]*\nstudents: \S+\n/);
      if (m) resolve([m[1], Number(m[2])]);
    });
    proc.on('exit', (c) => reject(new Error(`grainlabd exited ${c}`)));
  });
  const teacherLink = (out.match(/^teacher: (\S+)$/m) || [])[1] || null;
  return { proc, port, wsPort, base: `http://127.0.0.1:${port}`, tmp, teacherLink };
}

// Debian's chromium, headless, driven by the playwright-core of the client's lockfile
export async function launchChromium(client, extra = []) {
  const require = createRequire(join(client, 'package.json'));
  const { chromium } = require('playwright-core');
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync',
           '--disable-default-apps', '--no-first-run', '--metrics-recording-only', '--disable-breakpad', ...extra],
  });
}
