/**
 * The 'healing' scenario of `npm run bench`: how long an SMS that arrives right after a modem
 * reset or a replug waits before it is spooled, and how many AT commands an idle modem costs a minute.
 * Production wiring (createModemSupervisor) over the virtual modem (mock binding) and a real spool directory, with
 * the daemon's default intervals (sweep 60 s, liveness probe 30 s): the figures are what a user would see.
 *   - reset with a banner: each family's own boot banners (generic modems print none: `RDY`, another family's);
 *   - silent reset: no banner, URCs held until an AT (a SIM800 in auto-baud mode); found by the state probe, so the
 *     delay depends on where in the probe interval the reset falls (each sample waits a random 0-30 s first);
 *   - replug: the device vanishes for 1 s and comes back (booting again, banners included);
 *   - idle: commands received by the modem during one idle minute, every profile at once.
 * The delay is measured from the moment the modem answers again (reset issued / device back) to the spool write.
 * Only prints figures: nothing asserts times.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../src/config.js';
import { createModemSupervisor } from '../src/daemon/modem-wiring.js';
import { silentLogger } from '../src/log.js';
import { VirtualModem, type SimProfileId } from '../src/virtual-modem/virtual-modem.js';
import { Spool } from '../src/spool/store.js';
import { summarize, type Summary } from './stats.js';

export interface HealingOptions {
  /** Samples per profile and kind (silent resets take up to one probe interval each). */
  samples: number;
  profiles?: SimProfileId[];
  /** Length of the idle window. Default 60 s. */
  idleMs?: number;
}

export interface HealingRow {
  profile: SimProfileId;
  banner: Summary;
  silent: Summary;
  replug: Summary;
  /** AT commands received per idle minute, and which. */
  idlePerMinute: number;
  idleCommands: Record<string, number>;
}

interface Bench {
  vm: VirtualModem;
  spool: Spool;
  supervisor: ReturnType<typeof createModemSupervisor>;
  dir: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const started = performance.now();
  while (!(await cond())) {
    if (performance.now() - started > timeoutMs)
      throw new Error(`healing bench: timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
}

let seq = 0;

async function start(profile: SimProfileId): Promise<Bench> {
  const dir = await mkdtemp(join(tmpdir(), 'pulsa-bench-healing-'));
  const vm = new VirtualModem({ path: `virtual:bench-healing-${process.pid}-${++seq}`, profile, noise: false });
  const spool = await Spool.open(dir, { logger: silentLogger() });
  const m = parseConfig(
    {
      webhook: { url: 'http://127.0.0.1:9/unused' },
      modems: [{ name: `bench-${profile}`, port: `virtual:bench-${profile}`, senders: ['858'] }],
    },
    {},
  ).modems[0]!;
  const supervisor = createModemSupervisor(m, { spool, logger: silentLogger(), path: vm.start() });
  supervisor.start();
  await until(() => (supervisor.status().receiver?.sweeps ?? 0) >= 1, `${profile} running`, 30_000);
  return { vm, spool, supervisor, dir };
}

async function stop(b: Bench): Promise<void> {
  await b.supervisor.stop();
  await b.spool.close();
  b.vm.stop();
  await rm(b.dir, { recursive: true, force: true });
}

/** Issues `fault`, injects one SMS at once, returns ms from the fault to its spool write. */
async function delayAfter(b: Bench, fault: () => Promise<void> | void, label: string): Promise<number> {
  const text = `Pulsa ${label} ${++seq}`;
  const before = b.supervisor.status().receiver?.spooled ?? 0;
  await fault();
  const t0 = performance.now();
  b.vm.injectSms({ from: '858', text });
  await until(() => (b.supervisor.status().receiver?.spooled ?? 0) > before, `the SMS after ${label}`, 120_000);
  const delay = performance.now() - t0;
  await until(() => b.supervisor.status().state === 'running' && b.vm.storedMessages().length === 0, 'settled', 30_000);
  return delay;
}

async function measureProfile(
  profile: SimProfileId,
  samples: number,
): Promise<Omit<HealingRow, 'idlePerMinute' | 'idleCommands'>> {
  const b = await start(profile);
  try {
    const banner: number[] = [];
    const silent: number[] = [];
    const replug: number[] = [];
    for (let i = 0; i < samples; i++) {
      // Generic modems print no banner of their own: they print RDY (27.007 modules do), as another family would.
      banner.push(
        await delayAfter(b, () => b.vm.reboot(profile === 'generic' ? { banners: ['RDY'] } : {}), 'reset with banner'),
      );
      await sleep(Math.random() * 30_000); // a random phase of the 30 s probe interval
      silent.push(await delayAfter(b, () => b.vm.reboot({ silent: true, holdUntilAt: true }), 'silent reset'));
      b.vm.unplug();
      await sleep(1000);
      replug.push(await delayAfter(b, () => b.vm.replug(), 'replug'));
    }
    return { profile, banner: summarize(banner), silent: summarize(silent), replug: summarize(replug) };
  } finally {
    await stop(b);
  }
}

async function idleMinute(
  profiles: SimProfileId[],
  idleMs: number,
): Promise<Map<SimProfileId, { perMinute: number; commands: Record<string, number> }>> {
  const benches = await Promise.all(profiles.map((p) => start(p)));
  try {
    await sleep(2000); // the start sweep and its follow-ups are not idle traffic
    const before = benches.map((b) => b.vm.commandLog().length);
    await sleep(idleMs);
    const out = new Map<SimProfileId, { perMinute: number; commands: Record<string, number> }>();
    benches.forEach((b, i) => {
      const log = b.vm.commandLog().slice(before[i]);
      const commands: Record<string, number> = {};
      for (const c of log) commands[c] = (commands[c] ?? 0) + 1;
      out.set(profiles[i]!, { perMinute: (log.length * 60_000) / idleMs, commands });
    });
    return out;
  } finally {
    await Promise.all(benches.map(stop));
  }
}

export async function runHealing(o: HealingOptions): Promise<HealingRow[]> {
  const profiles = o.profiles ?? ['generic', 'simcom', 'huawei'];
  const idle = await idleMinute(profiles, o.idleMs ?? 60_000);
  const rows: HealingRow[] = [];
  for (const p of profiles) {
    const r = await measureProfile(p, o.samples);
    const i = idle.get(p)!;
    rows.push({ ...r, idlePerMinute: i.perMinute, idleCommands: i.commands });
  }
  return rows;
}
