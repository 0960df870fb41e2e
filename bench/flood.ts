/**
 * The control-socket flood: one local client pipelines 4 KiB `at` request lines into the running daemon's control
 * socket as fast as the socket takes them (reading and discarding the replies, reconnecting when dropped) for
 * `--sec` seconds, while an SMS arrives every few seconds. The daemon is its own process with the unit's node flags
 * on a virtual modem behind a pseudo-terminal (process/harness.ts).
 *
 *   node dist/bench/flood.js [--sec 60] [--sms-every-ms 5000] [--json]
 *
 * Also printed: what identifying a peer costs (SO_PEERCRED, src/control/server/peer.ts: in process, and through the
 * short-lived perl of the machines where that cannot run), the wall time of `--lookups` lookups in a row, each way.
 * Printed: RSS before, peak RSS (VmHWM) during the flood, RSS 10 s after the client left; the delay of the SMS
 * (injected on the modem -> POSTed to the webhook) during the flood; how the daemon answered the lines (ok, busy,
 * other errors) and how often it dropped the client. Figures only: nothing is asserted.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { peerCredentials, type PeerLookupOptions } from '../src/control/server/peer.js';
import { startHarness } from './process/harness.js';
import { unitNodeFlags } from './process/unit-flags.js';
import { singleText, tagFor } from './peer/workload.js';
import { summarize, type Summary } from './stats.js';

export interface FloodResult {
  sec: number;
  lineBytes: number;
  rssBeforeMiB: number | undefined;
  peakRssMiB: number | undefined;
  rssAfterMiB: number | undefined;
  smsDelay: Summary | undefined;
  smsLost: number;
  linesSent: number;
  answers: Record<string, number>;
  drops: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One 4 KiB request line (an `at` request whose command is padded with spaces, which a modem ignores). */
function floodLine(id: number): string {
  const head = { v: 1, id, op: 'at', command: 'AT+CSQ' };
  const base = JSON.stringify(head).length + 1;
  return JSON.stringify({ ...head, command: 'AT+CSQ' + ' '.repeat(4096 - base) }) + '\n';
}

class Flooder {
  linesSent = 0;
  drops = 0;
  readonly answers: Record<string, number> = {};
  private stopped = false;
  private socket: Socket | undefined;

  constructor(private readonly path: string) {}

  async run(): Promise<void> {
    while (!this.stopped) {
      await this.once();
      if (!this.stopped) {
        this.drops++;
        await sleep(50);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    this.socket?.destroy();
  }

  private once(): Promise<void> {
    return new Promise((resolve) => {
      const s = connect(this.path);
      this.socket = s;
      let buf = '';
      s.setEncoding('utf8');
      s.on('data', (chunk: string) => {
        buf += chunk;
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          let key = 'unparsable';
          try {
            const m = JSON.parse(line) as { ok?: boolean; error?: { code?: string }; event?: string };
            key = m.event ? `event ${m.event}` : m.ok ? 'ok' : (m.error?.code ?? 'error');
          } catch {
            // counted as unparsable
          }
          this.answers[key] = (this.answers[key] ?? 0) + 1;
        }
      });
      s.on('error', () => undefined); // 'close' follows
      s.on('close', () => resolve());
      s.on('connect', () => {
        const pump = (): void => {
          while (!this.stopped && !s.destroyed) {
            if (!s.write(floodLine(++this.linesSent))) return void s.once('drain', pump);
          }
        };
        pump();
      });
    });
  }
}

export async function runFlood(o: { sec: number; smsEveryMs: number; log: (l: string) => void }): Promise<FloodResult> {
  const h = await startHarness({ modems: 1, nodeArgs: unitNodeFlags(), log: o.log });
  try {
    await sleep(2000);
    const rssBeforeMiB = await h.rssMiB();
    const flooder = new Flooder(h.socketPath);
    const flooding = flooder.run();
    const delays: number[] = [];
    let lost = 0;
    const end = performance.now() + o.sec * 1000;
    let n = 0;
    const waits: Array<Promise<void>> = [];
    while (performance.now() < end) {
      await sleep(o.smsEveryMs);
      const tag = tagFor('L', ++n);
      const t = performance.now();
      h.inject(0, singleText(tag, n));
      waits.push(
        h.arrival(tag, Math.max(1000, end - performance.now()) + 30_000).then(
          (at) => void delays.push(at - t),
          () => void lost++,
        ),
      );
    }
    flooder.stop();
    await flooding;
    await Promise.all(waits);
    const peakRssMiB = await h.peakRssMiB();
    await sleep(10_000);
    const rssAfterMiB = await h.rssMiB();
    return {
      sec: o.sec,
      lineBytes: floodLine(1).length,
      rssBeforeMiB,
      peakRssMiB,
      rssAfterMiB,
      smsDelay: delays.length > 0 ? summarize(delays) : undefined,
      smsLost: lost,
      linesSent: flooder.linesSent,
      answers: flooder.answers,
      drops: flooder.drops,
    };
  } finally {
    await h.stop();
  }
}

/** Wall time of `n` peer lookups one after another on one accepted connection. */
export async function peerLookupCost(n: number, o: PeerLookupOptions = {}): Promise<Summary | undefined> {
  const dir = await mkdtemp(join(tmpdir(), 'pulsa-peer-'));
  const path = join(dir, 's.sock');
  const times: number[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      const server = createServer(async (s) => {
        for (let i = 0; i < n; i++) {
          const t = performance.now();
          const r = await peerCredentials(s, o);
          if (!r.ok) return reject(new Error(r.error));
          times.push(performance.now() - t);
        }
        s.destroy();
        server.close();
        resolve();
      });
      server.listen(path, () => connect(path).on('error', () => undefined));
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return times.length ? summarize(times) : undefined;
}

function mib(x: number | undefined): string {
  return x === undefined ? 'n/a' : `${x.toFixed(1)} MiB`;
}

export function floodReport(r: FloodResult): string {
  const d = r.smsDelay;
  return (
    [
      `control socket flood: one client pipelining ${r.lineBytes}-byte \`at\` lines for ${r.sec} s (daemon with the unit's node flags)`,
      `  RSS before ${mib(r.rssBeforeMiB)}, peak ${mib(r.peakRssMiB)}, 10 s after the client left ${mib(r.rssAfterMiB)}`,
      `  SMS delay during the flood (inject -> POST): ${d ? `median ${d.median.toFixed(0)} ms, p95 ${d.p95.toFixed(0)} ms, max ${d.max.toFixed(0)} ms over ${d.n}` : 'no SMS arrived'}${r.smsLost ? `, ${r.smsLost} not arrived` : ''}`,
      `  lines sent ${r.linesSent}; answers ${
        Object.entries(r.answers)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || 'none'
      }; client dropped ${r.drops} time(s)`,
    ].join('\n') + '\n'
  );
}

async function main(): Promise<void> {
  const arg = (name: string, dflt: number) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? Number(process.argv[i + 1]) : dflt;
  };
  const lookups = await peerLookupCost(arg('--lookups', 20));
  const perlLookups = await peerLookupCost(arg('--lookups', 20), {
    sockopt: async () => ({ ok: false, error: 'measured through perl' }),
  });
  const r = await runFlood({
    sec: arg('--sec', 60),
    smsEveryMs: arg('--sms-every-ms', 5000),
    log: (l) => process.stderr.write(l),
  });
  if (process.argv.includes('--json'))
    return void process.stdout.write(
      JSON.stringify({ ...r, peerLookupMs: lookups, perlPeerLookupMs: perlLookups }, null, 2) + '\n',
    );
  process.stdout.write(floodReport(r));
  const cost = (how: string, l: Summary | undefined) =>
    l &&
    process.stdout.write(
      `peer lookup (SO_PEERCRED ${how}, once per connection): median ${l.median.toFixed(2)} ms, p95 ${l.p95.toFixed(2)} ms, max ${l.max.toFixed(2)} ms over ${l.n}\n`,
    );
  cost('in process', lookups);
  cost('through perl, where that cannot run', perlLookups);
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
