/**
 * The status page in a real browser: Debian's Chromium (/usr/bin/chromium, headless, never downloaded) driven by
 * playwright-core, against the compiled daemon (`bin/pulsa-bridge run`) on two `pulsa-bridge simulate` modems over
 * pseudo-terminals, with a real webhook on loopback. The page goes healthy, then degraded (an operator's balance check
 * finds tsel-1's SIM below its minBalance: a warning, money still flows), then unhealthy (isat-1 unplugged); /healthz
 * and the compiled `status` are checked to say the same at each step. Writes screenshots of the three states at
 * desktop and phone widths (see SHOTS).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../support/chromium.js';
import { distBuilt, killAll, root, runCli, SimProcess, DaemonProcess } from '../support/daemon.js';
import { compiledCli } from '../support/cli.js';
import { until } from '../support/until.js';
import { reply, startServer, type TestServer } from '../forward/server.js';
import { testWebhook, writeConfig } from '../support/config.js';
import { tempDir } from '../support/tmp.js';
import { hasSocat } from '../support/pty.js';

const TOKEN = 'test-token-0123456789';
/** The page asks every 3 s (the daemon's PAGE_REFRESH_MS, also in the JSON). */
const REFRESH_MS = 3000;
/**
 * Where the screenshots go: dist/screenshots/ (generated, not committed) on every run; `npm run screenshots` sets
 * PB_SCREENSHOTS=docs/status-page to refresh the committed copies docs/monitoring.md shows.
 */
const SHOTS = path.resolve(root, process.env.PB_SCREENSHOTS ?? 'dist/screenshots/status-page');

let dir: string;
let config: string;
let cleanup: () => Promise<void>;
let server: TestServer;
let sims: SimProcess[] = [];
let daemon: DaemonProcess;
let base: string;
let browser: Browser;
let profile: string;

/** The address the daemon logged for its listener (configured with port 0). */
function listenAddress(d: DaemonProcess): string | undefined {
  for (const line of d.out) {
    const m = /serving \/metrics and \/healthz on http:\/\/([^"\s]+)/.exec(line);
    if (m) return m[1];
  }
  return undefined;
}

/** A page whose console errors (and uncaught exceptions) are collected in `consoleErrors`. */
async function openPage(context: BrowserContext, consoleErrors: string[]): Promise<Page> {
  const page = await context.newPage();
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
  page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
  return page;
}

const card = (page: Page, modem: string) => page.locator(`[data-modem="${modem}"]`);

/** Resizes the page and waits until the browser has applied the width (no fixed pause). */
async function resize(page: Page, width: number, height: number): Promise<void> {
  await page.setViewportSize({ width, height });
  await page.waitForFunction(`window.innerWidth === ${width}`, undefined, { timeout: 60_000 });
}

/** Screenshots of the page as it is, desktop (1280 px, the whole page) and phone (360 px: nothing scrolls sideways). */
async function screenshots(page: Page, state: string): Promise<void> {
  await mkdir(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `desktop-${state}.png`), fullPage: true });
  await resize(page, 360, 780);
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
  await page.screenshot({ path: path.join(SHOTS, `phone-${state}.png`), fullPage: false });
  await resize(page, 1280, 900);
}

/** /healthz as a probe reads it (open without the token: metrics.protectMetrics is off). */
async function healthz(): Promise<{ status: number; body: string }> {
  const r = await fetch(`${base}/healthz`);
  return { status: r.status, body: await r.text() };
}

/** The compiled `pulsa-bridge status` once it prints `health` (status.json is rewritten every few seconds). */
async function statusSaying(health: string): Promise<{ code: number | null; out: string }> {
  let r = { code: null as number | null, out: '' };
  await until(
    () => (r = compiledCli(['status', '--config', config])).out.includes(`health: ${health}`),
    `status to say health: ${health}`,
    60_000,
    { everyMs: 250, explain: () => r.out + (r.code ?? '') },
  );
  return r;
}

describe.skipIf(!hasSocat || !existsSync(CHROMIUM))('the status page in Chromium', () => {
  beforeAll(async () => {
    expect(distBuilt(), 'dist/ is missing: run `npm run build` (npm test does)').toBe(true);
    ({ dir, cleanup } = await tempDir('status-page'));
    server = await startServer([reply(200, '{"success":true}')]);
    sims = [
      await SimProcess.start(path.join(dir, 'tsel'), [], 60_000),
      await SimProcess.start(path.join(dir, 'isat'), [], 60_000),
    ];
    config = await writeConfig(dir, {
      webhook: testWebhook(server.url),
      modems: [
        {
          name: 'tsel-1',
          port: sims[0]!.link,
          senders: ['858'],
          number: '081234567890',
          operator: 'telkomsel',
          // The simulator's SIM holds Rp 24025: below this, a warning. Checked only on demand (the degraded step).
          balance: { intervalHours: 0, minBalance: 50_000 },
        },
        { name: 'isat-1', port: sims[1]!.link, senders: ['*'], operator: 'indosat' },
      ],
      metrics: { listen: '127.0.0.1:0', token: TOKEN, page: { showText: true } },
    });
    daemon = await DaemonProcess.start(config, 'started', 60_000);
    await until(() => daemon.count('modem ready') >= 2 || !daemon.running, 'both modems ready', 60_000);
    base = `http://${listenAddress(daemon)}`;
    profile = await mkdtemp(path.join(os.tmpdir(), 'pb-chromium-'));
    // A fresh profile directory (Playwright's --user-data-dir for launch()) under a fresh HOME: nothing is shared with
    // another run, and nothing in the browser reaches the network (no sync, no component updates, no QUIC).
    browser = await launchChromium(profile);
  }, 150_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.stop();
    await killAll();
    await server?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
    await cleanup?.();
  });

  it('refuses without the token: 401 asking for Basic auth, also with a wrong one', async () => {
    // Headless Chromium cannot show the login dialog: without credentials it ends the navigation
    // (ERR_INVALID_AUTH_CREDENTIALS) once the 401 arrives; with wrong ones it shows the 401's text. Either way every
    // answer is a 401 and the page never renders.
    for (const credentials of [undefined, { username: 'ops', password: 'not-the-token' }]) {
      const context = await browser.newContext(credentials ? { httpCredentials: credentials } : {});
      const page = await context.newPage();
      const answers: Array<{ status: number; auth: string | undefined }> = [];
      page.on('response', (r) => answers.push({ status: r.status(), auth: r.headers()['www-authenticate'] }));
      const shown = await page.goto(`${base}/`).catch((err: Error) => err);
      if (shown instanceof Error) expect(shown.message).toMatch(/ERR_INVALID_AUTH_CREDENTIALS/);
      else expect(await page.locator('body').innerText()).toContain('the token is needed');
      expect(await page.locator('#verdict').count()).toBe(0);
      expect(answers.length).toBeGreaterThan(0);
      for (const a of answers) {
        expect(a.status).toBe(401);
        expect(a.auth).toMatch(/^Basic realm="pulsa-bridge"/);
      }
      await context.close();
    }
  }, 60_000);

  it('healthy, degraded (a low balance) and unhealthy (a modem unplugged), as /healthz and status say; an SMS by the next refresh, markup as text', async () => {
    const context = await browser.newContext({
      httpCredentials: { username: 'ops', password: TOKEN },
      viewport: { width: 1280, height: 900 },
    });
    context.setDefaultTimeout(60_000); // navigation and screenshots too: generous on a loaded machine
    const consoleErrors: string[] = [];
    const page = await openPage(context, consoleErrors);
    const res = await page.goto(`${base}/`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
    await expect.poll(() => card(page, 'tsel-1').innerText(), { timeout: 60_000 }).toContain('✔ running');
    expect(await card(page, 'isat-1').innerText()).toContain('✔ running');
    expect(await card(page, 'tsel-1').innerText()).toMatch(/-73 dBm \(4\/5\)/);
    expect(await card(page, 'tsel-1').innerText()).toContain('0812•••••890');
    expect(await page.locator('#verdict').innerText()).toBe('✔ healthy');
    expect(await healthz()).toEqual({ status: 200, body: 'ok\n' });
    expect((await statusSaying('ok')).code).toBe(0);
    // The healthy page, desktop and phone (docs/monitoring.md shows them).
    await screenshots(page, 'healthy');

    // An operator SMS on tsel-1: on the page within one refresh of being spooled.
    sims[0]!.send('sms 858 Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08.');
    await until(() => daemon.logged('spooled'), 'the SMS spooled', 60_000);
    const spooledAt = Date.now();
    const sms = page.locator('#recent li', { hasText: 'from 858' });
    // By the page's own refresh (no reload). The wait is generous for a loaded machine: the delay is printed, not
    // asserted (a wall-clock bound belongs in bench/).
    await sms.waitFor({ timeout: 60_000 });
    console.log(`SMS on the page ${Date.now() - spooledAt} ms after the daemon spooled it (refresh ${REFRESH_MS} ms)`);
    await expect.poll(() => sms.innerText(), { timeout: 60_000 }).toContain('✔ delivered');
    expect(await sms.innerText()).toContain('Rp 5000 dari nomor 6282••••••774'); // the number in the text masked
    expect(await card(page, 'tsel-1').innerText()).toMatch(/last SMS\s+\d+ s ago/);

    // A sender code and a text carrying markup: shown as text, never parsed.
    sims[1]!.send('sms <b>X</b> <img src=x onerror="document.title=1">hello');
    const marked = page.locator('#recent li', { hasText: 'from <b>X</b>' });
    await marked.waitFor({ timeout: 60_000 });
    expect(await marked.locator('.sender').textContent()).toBe('from <b>X</b>');
    expect(await marked.locator('.text').textContent()).toBe('<img src=x onerror="document.title=1">hello');
    expect(await page.locator('#recent b, #recent img').count()).toBe(0);
    expect(await page.title()).toBe('pulsa-bridge status');

    // Degraded: the operator checks tsel-1's balance (through the daemon, which keeps the result): Rp 24025, below
    // its minBalance. A warning with its hint; money still flows, so /healthz stays 200 and `status` exits 0.
    const check = await runCli(['balance', '--config', config, '--modem', 'tsel-1']);
    expect(check.out, check.err).toMatch(/^tsel-1: Rp 24\.025, .*\[WARNING\]/);
    await expect
      .poll(() => page.locator('#verdict').innerText(), { timeout: 60_000 })
      .toBe('⚠ degraded: 1 warning (money flows)');
    const warned = await page.locator('#problem-list').innerText();
    expect(warned).toMatch(/^⚠ modem tsel-1: .*24025.*\n\s*hint: top the SIM up$/);
    expect(await card(page, 'tsel-1').innerText()).toContain('✔ running');
    expect(await card(page, 'isat-1').innerText()).toContain('✔ running');
    const degraded = await healthz();
    expect(degraded.status).toBe(200);
    expect(degraded.body).toMatch(/^degraded\n- modem tsel-1: .*24025.*\n {2}hint: top the SIM up\n$/);
    const st = await statusSaying('degraded');
    expect(st.code).toBe(0);
    expect(st.out).toMatch(/health: degraded \(money flows; warnings\)\n {2}- modem tsel-1: .*24025/);
    await screenshots(page, 'degraded');

    // isat-1's modem is unplugged (the simulator and its pseudo-terminal end): down, with the hint the CLI shows.
    await sims[1]!.stop('SIGTERM');
    await expect.poll(() => card(page, 'isat-1').innerText(), { timeout: 60_000 }).toMatch(/✖ down/);
    const down = await card(page, 'isat-1').innerText();
    expect(down).toMatch(/hint: .+/);
    await expect.poll(() => page.locator('#verdict').innerText(), { timeout: 60_000 }).toBe('✖ UNHEALTHY: 1 problem');
    const problems = await page.locator('#problem-list').innerText();
    expect(problems).toMatch(/^✖ modem isat-1 /);
    expect(problems).toContain('⚠ modem tsel-1: '); // the warning stays, after the problem
    expect(await card(page, 'tsel-1').innerText()).toContain('✔ running');
    const unhealthy = await healthz();
    expect(unhealthy.status).toBe(503);
    expect(unhealthy.body).toMatch(/^unhealthy\n- modem isat-1 /);
    expect((await statusSaying('UNHEALTHY')).code).toBe(1);

    // The screenshots docs/monitoring.md shows, desktop and phone.
    await screenshots(page, 'unhealthy');
    console.log(`screenshots: ${SHOTS}/{desktop,phone}-{healthy,degraded,unhealthy}.png`);
    await context.close();
    expect(consoleErrors).toEqual([]);
  }, 300_000);
});
