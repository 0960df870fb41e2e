/**
 * The canaries on the status page in a real browser: Debian's Chromium (never downloaded) driven by playwright-core
 * against the real metrics listener and the page's files, serving the page JSON buildPageView makes of a snapshot
 * with canaries (the daemon's scheduler is not needed to show what it reports). A row per canary with its state, the
 * day's spend against the cap, the last run and the next; numbers masked; no section at all without canaries; nothing
 * scrolls sideways at 360 px. Writes the degraded screenshots (see SHOTS).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Registry } from 'prom-client';
import type { Browser } from 'playwright-core';
import type { CanaryStatus } from '../../src/canary/types.js';
import { canaryWarning } from '../../src/health/model.js';
import { silentLogger } from '../../src/log.js';
import { buildPageView, type PageSnapshot } from '../../src/metrics/page-view.js';
import { startMetricsServer, type MetricsServer } from '../../src/metrics/server.js';
import { canaryStatus, pausedCanaryStatus } from '../support/canary.js';
import { CHROMIUM, launchChromium } from '../support/chromium.js';
import { root } from '../support/daemon.js';
import { tempDir } from '../support/tmp.js';

/** As in status-page.browser.test.ts: dist/screenshots/ on every run, docs/status-page with `npm run screenshots`. */
const SHOTS = path.resolve(root, process.env.PB_SCREENSHOTS ?? 'dist/screenshots/status-page');
const REFRESH_MS = 500;
const HOUR = 3_600_000;

const approved = (nowMs: number): CanaryStatus =>
  canaryStatus({
    nextRunAt: new Date(nowMs + 5 * HOUR).toISOString(),
    lastSuccessAt: new Date(nowMs - HOUR).toISOString(),
    lastRun: {
      id: 'r2',
      at: new Date(nowMs - HOUR).toISOString(),
      outcome: 'approved',
      spent: 5000,
      orderId: 'CVT-20261124-CD34',
      durationMs: 42_000,
    },
  });

const paused = (nowMs: number): CanaryStatus =>
  pausedCanaryStatus({
    lastSuccessAt: approved(nowMs).lastSuccessAt,
    reason: 'run r9 was cut off mid-send: check the centre SIM and order CVT-20261124-AB12, then resume',
    pausedAt: new Date(nowMs - 10 * 60_000).toISOString(),
    lastRun: {
      id: 'r9',
      at: new Date(nowMs - 11 * 60_000).toISOString(),
      outcome: 'unknown',
      spent: 5000,
      orderId: 'CVT-20261124-AB12',
      detail: 'the operator answered neither yes nor no to *858*081298765432*5000#',
    },
  });

function snapshot(canaries: CanaryStatus[] | undefined): PageSnapshot {
  const now = new Date().toISOString();
  const warnings = (canaries ?? []).flatMap((c) => canaryWarning(c) ?? []);
  return {
    version: '0.1.0',
    startedAt: new Date(Date.now() - 6 * HOUR).toISOString(),
    webhookUrl: 'http://127.0.0.1:8080/hook',
    modems: [
      {
        name: 'tsel-1',
        state: 'running',
        since: now,
        reconnects: 0,
        failedAttempts: 0,
        identity: { manufacturer: 'SIMCOM', model: 'SIM800L' },
        receiver: undefined,
        scheduler: { queued: 0, running: undefined },
        signal: { rssi: 20, dbm: -73, bars: 4, sampledAt: now },
        registration: { stat: 1, registered: true, text: 'registered home', source: 'CREG', sampledAt: now },
      } as never,
    ],
    forwarder: { running: true, delivered: 3, retried: 0, dead: 0, unrecorded: 0 },
    health: { healthy: true, state: warnings.length ? 'degraded' : 'healthy', problems: [], warnings },
    spool: { pending: 0, sent: 3, dead: 0, ignored: 0, quarantine: 0, parts: 0 },
    ...(canaries ? { canaries } : {}),
  };
}

let dir: string;
let cleanup: () => Promise<void>;
let listener: MetricsServer;
let browser: Browser;
let canaries: CanaryStatus[] | undefined;

describe.skipIf(!existsSync(CHROMIUM))('canaries on the status page in Chromium', () => {
  beforeAll(async () => {
    ({ dir, cleanup } = await tempDir('status-page-canaries'));
    listener = await startMetricsServer({
      listen: '127.0.0.1:0',
      registry: new Registry(),
      health: async () => snapshot(canaries).health,
      page: async () =>
        JSON.stringify(
          buildPageView({
            snapshot: snapshot(canaries),
            nowMs: Date.now(),
            configured: new Map([['tsel-1', { number: '081234567890', operator: 'telkomsel' }]]),
            ussd: () => undefined,
            recent: [],
            lastSmsAt: () => undefined,
            transfer: undefined,
            showText: false,
            showNumbers: false,
            refreshMs: REFRESH_MS,
          }),
        ),
      logger: silentLogger(),
    });
    browser = await launchChromium(dir);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await listener?.close();
    await cleanup?.();
  });

  it('a row per canary (state, spend and cap, last run, next run), numbers masked; gone when none is configured', async () => {
    const now = Date.now();
    canaries = [approved(now), paused(now)];
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
    page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
    await page.goto(`http://${listener.address}/`);
    const row = (name: string) => page.locator(`#canaries li[data-canary="${name}"]`);
    await row('tsel-hourly').waitFor({ timeout: 10_000 });
    expect(await page.locator('#canaries-section').isVisible()).toBe(true);

    const ok = await row('tsel-hourly').innerText();
    expect(ok).toContain('◷ waiting');
    expect(ok).toContain('Rp 5.000 from tsel-test through a reseller order, every 6\u00a0h');
    expect(ok).toContain('today Rp 10.000 of Rp 20.000');
    expect(ok).toMatch(/last run ✔ approved 60 min ago, order CVT-20261124-CD34/);
    expect(ok).toMatch(/next run \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d/);

    const held = await row('isat-direct').innerText();
    expect(held).toContain('‖ paused');
    expect(held).toContain('to 0812•••••432, every 15\u00a0min');
    expect(held).toContain('today Rp 5.000 of Rp 20.000');
    expect(held).toMatch(/last run \? send unknown 11 min ago, order CVT-20261124-AB12/);
    expect(held).toContain('next run: none until resumed');
    expect(held).toContain('paused: run r9 was cut off mid-send');
    expect(held).toContain('*858*0812•••••432*5000#');
    expect(held).not.toContain('081298765432');

    // The verdict and its warning: degraded, with the hint to resume.
    expect(await page.locator('#verdict').innerText()).toBe('⚠ degraded: 1 warning (money flows)');
    expect(await page.locator('#problem-list').innerText()).toContain('pulsa-bridge canary resume isat-direct');

    await mkdir(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, 'desktop-canaries.png'), fullPage: true });
    await page.setViewportSize({ width: 360, height: 780 });
    await page.waitForTimeout(300);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
    await page.locator('#canaries-section').scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, 'phone-canaries.png'), fullPage: false });

    // The canaries taken out of the config: the section goes at the next refresh.
    canaries = undefined;
    await expect.poll(() => page.locator('#canaries-section').isVisible(), { timeout: REFRESH_MS * 10 }).toBe(false);
    expect(await page.locator('#canaries li').count()).toBe(0);
    expect(await page.locator('#verdict').innerText()).toBe('✔ healthy');
    await context.close();
    expect(consoleErrors).toEqual([]);
  }, 60_000);
});
