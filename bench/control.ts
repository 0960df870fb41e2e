/**
 * The 'control' benchmark scenario: how long an incoming SMS waits when it arrives while operators use the modem
 * through the running daemon's control socket. The production daemon runs in-process (Daemon.start, real spool with
 * fsync in a temp dir, a local HTTP server answering 200) on the virtual modem with a per-answer latency (a real USB
 * modem answers in tens of ms); operators are ControlClients on the real Unix socket.
 *
 * wait = injectSms() -> the daemon's `sms` event (record durably spooled), measured on one clock in one process.
 * Phases, `samples` SMS each:
 *   idle          nothing else on the modem;
 *   during at     an `at` request (AT+CSQ) is running on the modem when the SMS arrives;
 *   behind 5 at   five `at` requests from two clients are queued or running when the SMS arrives: the SMS still
 *                 waits for one operator command, not five;
 *   during ussd   a USSD session is open: its menu shown, waiting for the operator's answer (the session holds no
 *                 lane); and with the operator's answer in flight (AT+CUSD on the lane, then the network's reply).
 * Only prints figures: nothing here asserts times.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../src/config.js';
import { ControlClient } from '../src/control/client/client.js';
import type { EventMessage } from '../src/control/protocol.js';
import { Daemon } from '../src/daemon.js';
import { createLogger } from '../src/log.js';
import { summarize, type Summary } from './stats.js';
import { configureVirtualModems, virtualModemAt } from '../src/virtual-modem/virtual-ports.js';

export interface ControlOptions {
  samples: number;
  /** Delay before every answer of the virtual modem (ms). */
  modemLatencyMs: number;
  logLevel: string;
}

export interface ControlRow {
  phase: string;
  wait: Summary | undefined;
  /** Why there is no figure (a phase this build cannot run). */
  note?: string;
}

export interface ControlResult {
  modemLatencyMs: number;
  rows: ControlRow[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const start = performance.now();
  while (!cond()) {
    if (performance.now() - start > timeoutMs) throw new Error(`bench control: timed out waiting for ${what}`);
    await sleep(1);
  }
}

export async function runControl(o: ControlOptions): Promise<ControlResult> {
  const dir = await mkdtemp(join(tmpdir(), 'pulsa-bench-control-'));
  const http = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true}'));
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/api/v1/convert-pulsa/webhook/sms-gateway`;
  const config = parseConfig({
    webhook: { url },
    spool: { dir: join(dir, 'spool'), fsync: true },
    modems: [{ name: 'bench-1', port: 'virtual:bench-1', senders: ['858'], sweepIntervalSec: 3600 }],
    log: { level: o.logLevel },
    shutdownGraceSec: 1,
  });
  const logger = createLogger({
    level: o.logLevel === 'info' ? 'warn' : o.logLevel,
    pretty: false,
    destination: process.stderr,
  });
  const undoDefaults = configureVirtualModems({ bootStepMs: 0, noise: false, latencyMs: o.modemLatencyMs });
  const daemon = await Daemon.start({ config, logger });
  undoDefaults();
  const clients: ControlClient[] = [];
  try {
    await waitFor(() => daemon.status().modems[0]?.state === 'running', 'the modem to run', 30_000);
    const vm = virtualModemAt('virtual:bench-1')!;
    const watcher = await ControlClient.connect(config.control.socketPath);
    const a = await ControlClient.connect(config.control.socketPath);
    const b = await ControlClient.connect(config.control.socketPath);
    clients.push(watcher, a, b);
    const spooledAt = new Map<string, number>();
    watcher.onEvent((e: EventMessage) => {
      if (e.event === 'sms') spooledAt.set((e.data as { text: string }).text, performance.now());
    });
    await watcher.request({ op: 'subscribe', events: ['sms'] });
    const scheduler = () => daemon.status().modems[0]!.scheduler;
    let seq = 0;
    /** One SMS; resolves with its wait (inject -> spooled). */
    const oneSms = async (): Promise<number> => {
      const text = `Anda mendapatkan penambahan pulsa Rp 5000 SN:${++seq}`;
      const t = performance.now();
      vm.injectSms({ from: '858', text });
      await waitFor(() => spooledAt.has(text), `SMS ${seq} to be spooled`);
      return spooledAt.get(text)! - t;
    };
    const settle = async () => {
      await waitFor(
        () => scheduler().running === undefined && scheduler().queued === 0 && vm.storedMessages().length === 0,
        'the modem to be idle',
      );
    };
    const phase = async (name: string, before: () => Promise<Array<Promise<unknown>>>): Promise<ControlRow> => {
      const waits: number[] = [];
      for (let i = 0; i < o.samples + 2; i++) {
        await settle();
        const running = await before();
        const w = await oneSms();
        await Promise.all(running);
        if (i >= 2) waits.push(w); // two warm-up rounds
      }
      return { phase: name, wait: summarize(waits) };
    };
    const atInFlight = (client: ControlClient) => client.request({ op: 'at', command: 'AT+CSQ' });
    const rows: ControlRow[] = [];
    rows.push(await phase('idle', async () => []));
    rows.push(
      await phase('during at (AT+CSQ running)', async () => {
        const p = atInFlight(a);
        await waitFor(() => scheduler().running?.startsWith('operator') === true, 'the at command to run');
        return [p];
      }),
    );
    rows.push(
      await phase('behind 5 at (2 clients)', async () => {
        const ps = [a, b, a, b, a].map(atInFlight);
        await waitFor(
          () => scheduler().running?.startsWith('operator') === true && scheduler().queuedBy.operator >= 4,
          'the at commands to queue',
        );
        return ps;
      }),
    );
    const openMenu = async () => {
      await a.request({ op: 'ussd.cancel' }); // the previous round's menu, if one is open
      await a.request({ op: 'ussd.open', code: '*888#' });
    };
    rows.push(
      await phase('during ussd (menu open)', async () => {
        await openMenu();
        return [];
      }),
    );
    rows.push(
      await phase('during ussd (answer in flight)', async () => {
        await openMenu();
        const p = a.request({ op: 'ussd.reply', text: '2' });
        await waitFor(() => scheduler().running?.startsWith('operator') === true, 'the USSD answer to run');
        return [p];
      }),
    );
    await a.request({ op: 'ussd.cancel' });
    return { modemLatencyMs: o.modemLatencyMs, rows };
  } finally {
    for (const c of clients) await c.close();
    await daemon.stop();
    await new Promise<void>((r) => http.close(() => r()));
    await rm(dir, { recursive: true, force: true });
  }
}
