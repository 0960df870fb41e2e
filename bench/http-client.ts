/**
 * The HTTP client for the daemon's POSTs, chosen by figures: node:http (http/request.ts's httpRequest, what the webhook
 * and the reseller client use), node's global fetch (undici inside node), and the undici package (`request`). Each
 * variant runs in a fresh node with the unit's flags against a local HTTP server in this process: RSS once the client
 * is imported and one POST is done, then `--posts` POSTs one after another over keep-alive (a webhook body of ~400
 * bytes, the answer read), reporting CPU per POST (user + system of the client process), wall time per POST, and the
 * peak RSS. `node alone` is the same process importing nothing, for the client's share. Figures only.
 *
 *   node dist/bench/http-client.js [--posts 2000] [--rounds 3] [--undici /path/to/node_modules/undici]
 *
 * undici is not a dependency: without --undici (or an `undici` the bench can import) that row says so.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { unitNodeFlags } from './process/unit-flags.js';
import { table } from './stats.js';

const VARIANTS = ['node alone', 'node:http (httpRequest)', 'fetch (node built-in)', 'undici request'] as const;
type Variant = (typeof VARIANTS)[number];

interface Sample {
  importRssMiB: number;
  peakMiB: number;
  cpuUsPerPost: number;
  msPerPost: number;
}

const BODY = JSON.stringify({
  id: 'sms-2026-11-26-0001',
  modem: 'telkomsel-1',
  imsi: '510100123456789',
  sender: '858',
  text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 26/11/2026 10:15. SN: 1234567890ABCDEF',
  scTimestamp: '2026-11-26T10:15:30+07:00',
  receivedAt: '2026-11-26T03:15:31.123Z',
  parts: 1,
});

function statusKiB(field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : NaN;
}

/** The child: import the variant's client, POST once, then `posts` times; print the figures as JSON. */
async function child(variant: Variant, url: string, posts: number, undiciPath: string | undefined): Promise<void> {
  const headers = { 'content-type': 'application/json', 'idempotency-key': 'k-0001' };
  let post: () => Promise<void>;
  if (variant === 'node alone') {
    post = async () => {};
  } else if (variant === 'node:http (httpRequest)') {
    const { httpRequest } = await import('../src/http/request.js');
    post = async () => {
      const r = await httpRequest({
        method: 'POST',
        url,
        headers,
        body: BODY,
        connectTimeoutMs: 5000,
        timeoutMs: 10000,
        maxBodyBytes: 65536,
      });
      if (r.kind !== 'response' || r.status !== 200) throw new Error(`POST failed: ${JSON.stringify(r).slice(0, 200)}`);
    };
  } else if (variant === 'fetch (node built-in)') {
    post = async () => {
      const r = await fetch(url, { method: 'POST', headers, body: BODY, signal: AbortSignal.timeout(10000) });
      await r.text();
      if (r.status !== 200) throw new Error(`POST failed: ${r.status}`);
    };
  } else {
    // not a dependency: imported by path (or by name, if one is installed), typed here by the one call used
    const spec: string = undiciPath ? pathToFileURL(undiciPath).href : 'undici';
    const undici = (await import(spec)) as {
      request: (url: string, o: object) => Promise<{ statusCode: number; body: { text(): Promise<string> } }>;
    };
    post = async () => {
      const r = await undici.request(url, {
        method: 'POST',
        headers,
        body: BODY,
        headersTimeout: 10000,
        bodyTimeout: 10000,
      });
      await r.body.text();
      if (r.statusCode !== 200) throw new Error(`POST failed: ${r.statusCode}`);
    };
  }
  await post();
  const importRssMiB = statusKiB('VmRSS') / 1024;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < posts; i++) await post();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const out: Sample = {
    importRssMiB,
    peakMiB: statusKiB('VmHWM') / 1024,
    cpuUsPerPost: (cpu.user + cpu.system) / posts,
    msPerPost: wall / posts,
  };
  process.stdout.write(JSON.stringify(out));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const opt = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  if (argv[0] === '--child') return child(argv[1] as Variant, argv[2]!, Number(argv[3]), argv[4] || undefined);
  const posts = Number(opt('--posts') ?? 2000);
  const rounds = Number(opt('--rounds') ?? 3);
  let undiciPath = opt('--undici');
  if (undiciPath && !undiciPath.endsWith('.js') && !undiciPath.endsWith('.mjs'))
    undiciPath = `${undiciPath.replace(/\/$/, '')}/index.js`;
  // The webhook: answers every POST 200 once its body is read, keep-alive.
  let received = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const flags = unitNodeFlags();
  const self = fileURLToPath(import.meta.url);
  const samples = new Map<Variant, Sample[]>();
  const notes: string[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      for (const variant of VARIANTS) {
        process.stderr.write(`http-client: round ${round + 1}/${rounds}, ${variant}\n`);
        const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
          // spawnSync would block this process's server: run the child asynchronously.
          import('node:child_process').then(({ execFile }) => {
            execFile(
              process.execPath,
              [...flags, self, '--child', variant, url, String(posts), undiciPath ?? ''],
              { maxBuffer: 1 << 20 },
              (err, stdout, stderr) =>
                resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
            );
          });
        });
        if (r.status !== 0) {
          const note = `${variant}: ${
            r.stderr
              .trim()
              .split('\n')
              .find((l) => /Error|Cannot find/.test(l)) ?? r.stderr.trim().slice(0, 200)
          }`;
          if (!notes.includes(note)) notes.push(note);
          continue;
        }
        samples.set(variant, [...(samples.get(variant) ?? []), JSON.parse(r.stdout) as Sample]);
      }
    }
  } finally {
    server.close();
    server.closeAllConnections();
  }
  const alone = samples.get('node alone');
  const base = alone ? median(alone.map((s) => s.importRssMiB)) : NaN;
  const rows = VARIANTS.map((v) => {
    const s = samples.get(v);
    if (!s) return [v, '-', '-', '-', '-', '-'];
    const rss = median(s.map((x) => x.importRssMiB));
    return [
      v,
      rss.toFixed(1),
      v === 'node alone' ? '-' : `+${(rss - base).toFixed(1)}`,
      median(s.map((x) => x.peakMiB)).toFixed(1),
      v === 'node alone' ? '-' : median(s.map((x) => x.cpuUsPerPost)).toFixed(0),
      v === 'node alone' ? '-' : median(s.map((x) => x.msPerPost)).toFixed(3),
    ];
  });
  process.stdout.write(
    `node ${process.version}, flags ${flags.join(' ') || '(none)'}; ${posts} POSTs one after another to a local server (keep-alive), median of ${rounds} rounds; ${received} POSTs received\n`,
  );
  process.stdout.write(
    `${table(['client', 'RSS after import + 1 POST, MiB', 'above node alone', `peak RSS after ${posts}, MiB`, 'CPU us per POST', 'ms per POST'], rows)}\n`,
  );
  for (const n of notes) process.stdout.write(`- ${n}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`http-client: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
