/**
 * The status page's cost, in one run: the real daemon (bench/process/harness.ts: its own process with the unit's node
 * flags, two virtual modems on socat pseudo-terminals, a local webhook) with the listener and the page on, measured
 * in interleaved phases: no page open, then ten pages open in Debian's Chromium (playwright-core, each page refreshing
 * itself every 3 s as an operator's would), then none again. Per phase: the daemon's CPU seconds per minute, its RSS
 * (mean and max of 1 s samples), and one SMS every 2 s injected -> POSTed (median, p95, max): SMS must not wait for
 * the page. Also the page's weight in bytes (its four files and one JSON answer for two modems).
 * Figures only; nothing is asserted. Usage: node dist/bench/status-page.js [--phase-sec 60] [--pages 10]
 */
import { createServer, type AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../test/support/chromium.js';
import { startHarness, type Harness } from './process/harness.js';
import { unitNodeFlags } from './process/unit-flags.js';
import { singleText, tagFor } from './peer/workload.js';

const TOKEN = 'bench-token-0123456789';
const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const PHASE_SEC = arg('phase-sec', 60);
const PAGES = arg('pages', 10);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

interface Phase {
  name: string;
  cpuPerMin: number;
  rssMean: number;
  rssMax: number;
  smsMs: number[];
  pageLoads: number;
}

async function phase(h: Harness, name: string, first: number, pageLoads: () => number): Promise<Phase> {
  const cpu0 = (await h.cpu())!.self;
  const t0 = performance.now();
  const loads0 = pageLoads();
  const rss: number[] = [];
  const smsMs: number[] = [];
  const sampler = setInterval(() => void h.rssMiB().then((v) => v !== undefined && rss.push(v)), 1000);
  const count = Math.floor(PHASE_SEC / 2);
  for (let i = 0; i < count; i++) {
    const tag = tagFor('L', first + i);
    const at = performance.now();
    h.inject(i % 2, singleText(tag, first + i));
    smsMs.push((await h.arrival(tag, 30_000)) - at);
    await sleep(Math.max(0, at + 2000 - performance.now()));
  }
  clearInterval(sampler);
  const minutes = (performance.now() - t0) / 60_000;
  const cpu = ((await h.cpu())!.self - cpu0) / minutes;
  return {
    name,
    cpuPerMin: cpu,
    rssMean: rss.reduce((a, b) => a + b, 0) / rss.length,
    rssMax: Math.max(...rss),
    smsMs,
    pageLoads: pageLoads() - loads0,
  };
}

async function main(): Promise<void> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const log = (l: string) => process.stdout.write(l);
  log(
    `status page bench: ${PAGES} pages, ${PHASE_SEC} s per phase, node ${process.version}, unit flags ${unitNodeFlags().join(' ')}\n`,
  );
  const h = await startHarness({
    modems: 2,
    nodeArgs: unitNodeFlags(),
    metrics: { listen: `127.0.0.1:${port}`, token: TOKEN },
    log,
  });
  const profile = await mkdtemp(join(tmpdir(), 'pb-bench-chromium-'));
  let browser: Browser | undefined;
  try {
    const auth = { authorization: `Bearer ${TOKEN}` };
    let weight = 0;
    const parts: string[] = [];
    for (const p of ['/', '/page.js', '/page.css', '/favicon.svg', '/api/status']) {
      const n = (await (await fetch(`${base}${p}`, { headers: auth })).arrayBuffer()).byteLength;
      weight += n;
      parts.push(`${p} ${n}`);
    }
    log(`page weight: ${weight} bytes (${parts.join(', ')}; no compression, nothing else loaded)\n`);

    let loads = 0;
    const none1 = await phase(h, 'no page open', 100, () => loads);
    browser = await launchChromium(profile);
    const context = await browser.newContext({
      httpCredentials: { username: 'ops', password: TOKEN },
      viewport: { width: 1280, height: 900 },
    });
    const pages: Page[] = [];
    for (let i = 0; i < PAGES; i++) {
      const page = await context.newPage();
      page.on('response', (r) => r.url().endsWith('/api/status') && loads++);
      await page.goto(`${base}/`);
      pages.push(page);
    }
    await sleep(3000);
    const ten = await phase(h, `${PAGES} pages open`, 300, () => loads);
    await context.close();
    await browser.close();
    browser = undefined;
    await sleep(3000);
    const none2 = await phase(h, 'no page open again', 500, () => loads);

    log(
      '\n| phase | daemon CPU s/min | RSS mean / max MiB | /api/status answers | SMS inject -> POST median / p95 / max ms |\n|---|---|---|---|---|\n',
    );
    for (const p of [none1, ten, none2]) {
      log(
        `| ${p.name} | ${p.cpuPerMin.toFixed(3)} | ${p.rssMean.toFixed(1)} / ${p.rssMax.toFixed(1)} | ${p.pageLoads} | ${pct(p.smsMs, 50).toFixed(1)} / ${pct(p.smsMs, 95).toFixed(1)} / ${Math.max(...p.smsMs).toFixed(1)} |\n`,
      );
    }
  } finally {
    await browser?.close().catch(() => undefined);
    await h.stop();
    await rm(profile, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
