/**
 * `npm run bench`: end-to-end receive latency of pulsa-bridge (+CMTI at the modem -> POST at a local webhook), over
 * the mock binding and over a pseudo-terminal with the native binding, plus the cost of a durable spool write, the
 * serial wire time of one SMS at 115200 baud, and memory after a burst. Prints a plain table (or JSON with --json).
 * Only prints figures: nothing here asserts times. Every scenario is bounded (timeouts) and stopped cleanly.
 *
 *   node dist/bench/run.js [--json] [--samples 50] [--burst 100] [--scenarios cli,mock,pty,pty-paced,process,backlog,control,outage,healing]
 *                          [--backlog 5000] [--backlog-spread-ms 10000] [--idle-sec 60] [--modems 16]
 *
 * 'cli' (default set, run first) prints the CLI's start-up per command beside `node -e ''` (cli-startup.ts).
 * 'process' (in the default set) measures the real daemon process (process/run.ts: burst of 30 with where its time goes,
 * VmHWM through 100 SMS, idle AT commands and CPU per minute, node flag variants, `--modems` modems in one daemon, the
 * memory budget beside node alone); `node dist/bench/process/run.js` runs it alone with more options.
 *
 * 'backlog' (not in the default set: it writes thousands of fsynced records) drains a large pending backlog through the
 * production Forwarder (see backlog.ts). 'control' measures how long an SMS waits when it arrives while operators use
 * the modem through the daemon's control socket (see control.ts).
 * 'outage' (default set; --outage-sec, default 60, --outage-records, default 20): the delay from the end of a webhook
 * outage (500s for that long, then connections refused for half as long) to the delivery of the pending records
 * (see webhook-outage.ts).
 * 'healing' (healing.ts) measures the delay of an SMS after a modem reset with
 * and without a banner and after a replug, and the idle AT commands per minute; --healing-samples N per profile
 * (default 2; a silent reset sample takes up to one 30 s probe interval).
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/log.js';
import { Spool } from '../src/spool/store.js';
import { SPOOL_RECORD_VERSION, type SmsRecord } from '../src/spool/types.js';
import { runBacklog, type BacklogResult } from './backlog.js';
import { runControl, type ControlResult } from './control.js';
import { runOutage, type OutageResult } from './webhook-outage.js';
import { runHealing, type HealingRow } from './healing.js';
import { runScenario, type ScenarioOptions, type ScenarioResult } from './scenario.js';
import { PROCESS_DEFAULTS, processReport, runProcessBench, type ProcessResults } from './process/run.js';
import { cliReport, measureCli, type CliRow } from './cli-startup.js';
import { ms, smsExchange, summarize, table, wireTimeMs, type Summary } from './stats.js';

const BAUD = 115_200;

interface Args {
  json: boolean;
  samples: number;
  burst: number;
  scenarios: string[];
  backlog: number;
  backlogSpreadMs: number;
  outageSec: number;
  outageRecords: number;
  healingSamples: number;
  idleSec: number;
  modems: number;
}

const SCENARIOS = ['cli', 'mock', 'pty', 'pty-paced', 'process', 'backlog', 'control', 'outage', 'healing'];
/** Per-answer delay of the virtual modem in the control scenario: a USB modem answers in tens of ms. */
const CONTROL_MODEM_LATENCY_MS = 20;

class UsageError extends Error {}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    json: false,
    samples: 50,
    burst: 100,
    scenarios: ['cli', 'mock', 'pty', 'pty-paced', 'process', 'control', 'outage', 'healing'],
    backlog: 5000,
    backlogSpreadMs: 10_000,
    outageSec: 60,
    outageRecords: 20,
    healingSamples: 2,
    idleSec: 60,
    modems: 16,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`${a} needs a value`);
      return v;
    };
    const count = (v: string, max: number) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1 || n > max) throw new UsageError(`${a} expects an integer from 1 to ${max}`);
      return n;
    };
    if (a === '--json') args.json = true;
    else if (a === '--samples') args.samples = count(value(), 1000);
    else if (a === '--burst')
      args.burst = count(value(), 250); // the virtual SIM holds at most 255
    else if (a === '--scenarios')
      args.scenarios = value()
        .split(',')
        .map((s) => s.trim());
    else if (a === '--backlog') args.backlog = count(value(), 100_000);
    else if (a === '--outage-sec') args.outageSec = count(value(), 3600);
    else if (a === '--outage-records') args.outageRecords = count(value(), 10_000);
    else if (a === '--healing-samples') args.healingSamples = count(value(), 100);
    else if (a === '--idle-sec') args.idleSec = count(value(), 3600);
    else if (a === '--modems') args.modems = count(value(), 64);
    else if (a === '--backlog-spread-ms') {
      const v = value();
      args.backlogSpreadMs = v === '0' ? 0 : count(v, 3_600_000);
    } else if (a === '--help' || a === '-h') {
      process.stdout.write(
        'usage: node dist/bench/run.js [--json] [--samples N] [--burst N] [--scenarios cli,mock,pty,pty-paced,process,backlog,control,outage,healing] [--backlog N] [--outage-sec S] [--outage-records N] [--backlog-spread-ms MS (0: no waiting phase)] [--healing-samples N] [--idle-sec S] [--modems N]\n',
      );
      process.exit(0);
    } else throw new UsageError(`unknown argument ${a} (try --help)`);
  }
  for (const s of args.scenarios)
    if (!SCENARIOS.includes(s)) throw new UsageError(`unknown scenario ${s} (${SCENARIOS.join(', ')})`);
  return args;
}

interface SpoolCostRow {
  label: string;
  putPending: Summary;
  markDelivered?: Summary;
}

/**
 * Spool.putPending alone in a fresh temp spool: back to back, and in the daemon's rhythm (each record delivered,
 * i.e. moved to sent/ by markDelivered, before the next arrives), with fsync on and off.
 */
async function spoolCost(n: number): Promise<{ rows: SpoolCostRow[]; dir: string }> {
  const base = await mkdtemp(join(tmpdir(), 'pulsa-bench-spool-'));
  const once = async (fsync: boolean, deliver: boolean): Promise<SpoolCostRow> => {
    const name = `${fsync ? 'on' : 'off'}-${deliver ? 'cycle' : 'puts'}`;
    const spool = await Spool.open(join(base, name), { logger: silentLogger(), fsync });
    const put: number[] = [];
    const mark: number[] = [];
    try {
      for (let i = 0; i < n + 5; i++) {
        const rec: SmsRecord = {
          v: SPOOL_RECORD_VERSION,
          kind: 'sms',
          id: `bench-${name}-${i}`,
          sim: { modem: 'bench', imsi: '510100123456789' },
          sender: '858',
          text: `Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2026-11-22. SN: SPOOL${i}`,
          scTimestamp: '2026-11-22T10:15:30+07:00',
          receivedAt: new Date().toISOString(),
          pdus: ['07912618485400F9040381580000108110015103820A'],
          attempts: 0,
        };
        const t = performance.now();
        await spool.putPending(rec);
        const t2 = performance.now();
        if (deliver) await spool.markDelivered(rec.id, { status: 200, at: new Date() });
        if (i >= 5) {
          put.push(t2 - t);
          if (deliver) mark.push(performance.now() - t2);
        }
      }
    } finally {
      await spool.close();
    }
    const label = `${deliver ? 'put + markDelivered' : 'puts back to back'}, fsync ${fsync ? 'on' : 'off'}`;
    return deliver
      ? { label, putPending: summarize(put), markDelivered: summarize(mark) }
      : { label, putPending: summarize(put) };
  };
  try {
    const rows: SpoolCostRow[] = [];
    for (const deliver of [true, false]) for (const fsync of [true, false]) rows.push(await once(fsync, deliver));
    return { rows, dir: tmpdir() };
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

function filesystemOf(dir: string): string {
  const r = spawnSync('df', ['-T', dir], { encoding: 'utf8' });
  const cols = r.status === 0 ? (r.stdout.trim().split('\n')[1] ?? '').split(/\s+/) : [];
  return cols[1] ?? 'unknown';
}

function controlReport(c: ControlResult, samples: number): string[] {
  return [
    `control: how long an SMS waits (injected -> durably spooled) while operators use the modem through the daemon's control socket;`,
    `in-process daemon, virtual modem answering every command after ${c.modemLatencyMs} ms, ${samples} SMS per phase, ms:`,
    table(
      ['phase', 'n', 'median', 'p95', 'max', ''],
      c.rows.map((r) =>
        r.wait
          ? [r.phase, String(r.wait.n), ms(r.wait.median), ms(r.wait.p95), ms(r.wait.max), '']
          : [r.phase, '-', '-', '-', '-', r.note ?? ''],
      ),
    ),
  ];
}

function report(
  args: Args,
  results: ScenarioResult[],
  spool: Awaited<ReturnType<typeof spoolCost>>,
  backlog: BacklogResult | undefined,
  control: ControlResult | undefined,
  outage: OutageResult[] | undefined,
  healing: HealingRow[] | undefined,
): string {
  const out: string[] = [];
  const pdu = results.find((r) => r.samplePdu)?.samplePdu;
  out.push(
    `pulsa-bridge bench: node ${process.version}, ${process.platform}/${process.arch}, ${cpus().length} CPU(s), spool fsync ON in ${spool.dir} (${filesystemOf(spool.dir)})`,
  );
  if (results.length > 0) {
    out.push(
      `latency = +CMTI emitted by the virtual modem -> POST body received by the local webhook (ms); ${args.samples} single messages one at a time, then a burst of ${args.burst}`,
    );
    out.push('');
    const rows: string[][] = [];
    for (const r of results) {
      const link =
        r.transport === 'mock'
          ? 'mock binding'
          : `pty native ${r.baudRate}${r.paceBaud ? `, paced ${r.paceBaud}` : ''}`;
      rows.push([
        r.name,
        link,
        'single',
        String(r.single.n),
        ms(r.single.median),
        ms(r.single.p95),
        ms(r.single.max),
        '-',
        '-',
      ]);
      rows.push([
        r.name,
        link,
        'burst',
        String(r.burst.latency.n),
        ms(r.burst.latency.median),
        ms(r.burst.latency.p95),
        ms(r.burst.latency.max),
        ms(r.burst.drainMs),
        r.burst.messagesPerSecond.toFixed(0),
      ]);
    }
    out.push(table(['scenario', 'serial', 'phase', 'n', 'median', 'p95', 'max', 'drain', 'SMS/s'], rows));
    out.push('');
    out.push('where a single message spends its time, median (p95) ms:');
    out.push(
      table(
        ['scenario', '+CMTI -> AT+CMGR at modem', 'read + decode', 'putPending (fsync)', 'spooled -> POST'],
        results.map((r) => [
          r.name,
          ...(['toCmgr', 'readAndDecode', 'putPending', 'toPost'] as const).map(
            (k) => `${ms(r.stages[k].median)} (${ms(r.stages[k].p95)})`,
          ),
        ]),
      ),
    );

    if (pdu) {
      const steps = smsExchange(pdu);
      const total = steps.reduce((s, x) => s + x.bytes, 0);
      const beforePost = steps.filter((s) => s.beforePost).reduce((s, x) => s + x.bytes, 0);
      out.push('');
      out.push(
        `serial bytes per SMS (single part, ${pdu.tpduLength}-octet TPDU, echo off), wire time at ${BAUD} baud (10 bits/byte):`,
      );
      out.push(
        table(
          ['step', 'direction', 'bytes', 'ms'],
          steps.map((s) => [
            `${s.what}${s.beforePost ? ' *' : ''}`,
            s.dir,
            String(s.bytes),
            ms(wireTimeMs(s.bytes, BAUD)),
          ]),
        ),
      );
      out.push(
        `total ${total} bytes = ${ms(wireTimeMs(total, BAUD))} ms per SMS (the line carries at most ${(1000 / wireTimeMs(total, BAUD)).toFixed(0)} SMS/s);`,
      );
      out.push(
        `* = before the POST can start (${beforePost} bytes = ${ms(wireTimeMs(beforePost, BAUD))} ms); the re-check and AT+CMGD run while the POST is in flight.`,
      );
      const measured = results
        .map((r) => `${r.name} ${(r.bytesPerSms.fromModem + r.bytesPerSms.toModem).toFixed(0)}`)
        .join(', ');
      out.push(`measured at the virtual modem (single phase, includes AT+CPMS? every 10th SMS): ${measured} bytes/SMS`);
      out.push('');
      out.push('bridge share of the single-message median (latency minus the wire time it contains):');
      const shareRows = results.map((r) => {
        // A pseudo-terminal and the mock move bytes at memory speed: only the paced scenario carries wire time.
        const inLatency = r.paceBaud ? wireTimeMs(beforePost, r.paceBaud) : 0;
        const share = r.single.median - inLatency;
        return [r.name, ms(r.single.median), ms(inLatency), ms(share), ms(share + wireTimeMs(beforePost, BAUD))];
      });
      out.push(table(['scenario', 'median', 'wire in it', 'bridge share', `expected on a ${BAUD} modem`], shareRows));
    }
  }
  out.push('');
  out.push(
    'durable spool write (Spool.putPending: tmp write + fsync + rename + fsync dir) and markDelivered (pending -> sent), ms:',
  );
  const spoolRows: string[][] = spool.rows.map((r) => [
    `standalone: ${r.label}`,
    String(r.putPending.n),
    ms(r.putPending.median),
    ms(r.putPending.p95),
    ms(r.markDelivered?.median),
    ms(r.markDelivered?.p95),
  ]);
  for (const r of results) {
    spoolRows.push([
      `in ${r.name}, single`,
      String(r.putPendingSingle.n),
      ms(r.putPendingSingle.median),
      ms(r.putPendingSingle.p95),
      ms(r.markDeliveredSingle.median),
      ms(r.markDeliveredSingle.p95),
    ]);
    spoolRows.push([
      `in ${r.name}, burst`,
      String(r.putPendingBurst.n),
      ms(r.putPendingBurst.median),
      ms(r.putPendingBurst.p95),
      '-',
      '-',
    ]);
  }
  out.push(table(['where', 'n', 'put median', 'put p95', 'mark median', 'mark p95'], spoolRows));

  if (results.length > 0) {
    out.push('');
    out.push(
      'memory after each burst (one process: simulator, daemon and receiver; peak RSS is the process peak so far), MiB:',
    );
    out.push(
      table(
        ['scenario', 'peak RSS', 'RSS', 'heap used', 'settled ms'],
        results.map((r) => [
          r.name,
          r.memoryAfterBurst.maxRssMiB.toFixed(1),
          r.memoryAfterBurst.rssMiB.toFixed(1),
          r.memoryAfterBurst.heapUsedMiB.toFixed(1),
          ms(r.burst.settledMs),
        ]),
      ),
    );
    out.push('');
    const dT = results
      .map(
        (r) =>
          `${r.name} median ${(r.injectToCmti.median * 1000).toFixed(0)} us, max ${(r.injectToCmti.max * 1000).toFixed(0)} us`,
      )
      .join('; ');
    out.push(
      `time stamps: +CMTI is stamped in VirtualModem.send() as its bytes go to the serial side; injectSms() -> that stamp: ${dT}.`,
    );
  }
  const dups = results.filter((r) => r.duplicatesAtReceiver > 0);
  if (dups.length > 0)
    out.push(`duplicates at the receiver: ${dups.map((r) => `${r.name} ${r.duplicatesAtReceiver}`).join(', ')}`);
  if (backlog) out.push('', ...backlogReport(backlog, args));
  if (control) out.push('', ...controlReport(control, args.samples));
  if (outage) out.push('', ...outageReport(outage));
  if (healing) out.push('', ...healingReport(healing));
  return out.join('\n') + '\n';
}

function outageReport(rows: OutageResult[]): string[] {
  const out: string[] = [];
  out.push(
    'webhook outage: records pending during an outage, production Forwarder and retry defaults (1 s base, 2 s probe cap),',
  );
  out.push("real spool (fsync on), local HTTP server; delay = end of the outage -> the record's 2xx");
  out.push(
    table(
      ['outage', 'records', 'requests during', 'min gap', 'delivered', 'delay med/max'],
      rows.map((r) => [
        `${r.kind === '500' ? '500s' : 'refused'} ${Math.round(r.outageMs / 1000)} s`,
        String(r.records),
        String(r.requestsDuringOutage),
        r.minGapMs === undefined ? '-' : `${r.minGapMs} ms`,
        `${r.delivered}/${r.records}`,
        `${ms(r.delay.median)} / ${ms(r.delay.max)} ms`,
      ]),
    ),
  );
  return out;
}

function healingReport(rows: HealingRow[]): string[] {
  const cell = (s: HealingRow['banner']) => `${ms(s.median)} / ${ms(s.max)}`;
  return [
    `self-healing (mock binding, default intervals: sweep 60 s, probe 30 s; ${rows[0]?.banner.n ?? 0} sample(s) each): ms from the modem answering again to the SMS spooled, median / max`,
    table(
      ['profile', 'reset with banner', 'silent reset', 'replug (1 s away)', 'idle AT/min', 'idle commands'],
      rows.map((r) => [
        r.profile,
        cell(r.banner),
        cell(r.silent),
        cell(r.replug),
        r.idlePerMinute.toFixed(1),
        Object.entries(r.idleCommands)
          .map(([c, n]) => `${c} x${n}`)
          .join(', '),
      ]),
    ),
  ];
}

function backlogReport(b: BacklogResult, args: Args): string[] {
  const out: string[] = [];
  const n = b.phases[0]?.records ?? 0;
  out.push(
    `backlog: ${n} pending records (4 modems, written in shuffled order with fsync in ${ms(b.fillMs)} ms), spool re-opened, then drained by`,
  );
  out.push(
    `the Forwarder into the local demo receiver (fsync on). due = all due at once; waiting = retry times spread over ${args.backlogSpreadMs} ms`,
  );
  out.push(
    'unrelated to receivedAt (its drain time is at least that spread). pick gap = markDelivered resolved -> next POST',
  );
  out.push(
    'started (event-loop time spent choosing the next record); spool read = synchronous time of the spool call used to',
  );
  out.push('choose; event-loop delay from monitorEventLoopDelay over the drain. ms:');
  const rows = b.phases.map((p) => [
    p.phase,
    ms(p.openMs),
    ms(p.drainMs),
    p.postsPerSecond.toFixed(0),
    p.pickGap ? `${ms(p.pickGap.median)} / ${ms(p.pickGap.p95)} / ${ms(p.pickGap.max)}` : '-',
    `${p.spoolReadMethod} ${ms(p.spoolRead.median)} / ${ms(p.spoolRead.p95)} / ${ms(p.spoolRead.max)} (n ${p.spoolRead.n})`,
    `${ms(p.eventLoopDelay.p50)} / ${ms(p.eventLoopDelay.p99)} / ${ms(p.eventLoopDelay.max)}`,
  ]);
  out.push(
    table(
      ['phase', 'open', 'drain', 'POST/s', 'pick gap med/p95/max', 'spool read med/p95/max', 'loop delay p50/p99/max'],
      rows,
    ),
  );
  return out;
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const hasSocat = spawnSync('socat', ['-V'], { stdio: 'ignore' }).status === 0;
  // First, on a quiet machine: the CLI's start-up beside node's own (cli-startup.ts).
  let cli: CliRow[] | undefined;
  if (args.scenarios.includes('cli')) cli = await measureCli(10, (l) => process.stderr.write(l));
  const wanted = args.scenarios
    .filter((s) => !['cli', 'backlog', 'control', 'outage', 'healing', 'process'].includes(s))
    .filter((s) => {
      if (s !== 'mock' && !hasSocat) {
        process.stderr.write(`bench: socat is not installed: skipping scenario ${s} (apt-get install socat)\n`);
        return false;
      }
      return true;
    });
  const base = { samples: args.samples, burst: args.burst, warmup: 5, logLevel: process.env.LOG_LEVEL ?? 'info' };
  const options: Record<string, ScenarioOptions> = {
    mock: { ...base, name: 'mock', transport: 'mock' },
    pty: { ...base, name: 'pty', transport: 'pty' },
    'pty-paced': { ...base, name: 'pty-paced', transport: 'pty', paceBaud: BAUD },
  };
  const results: ScenarioResult[] = [];
  for (const name of wanted) {
    const started = performance.now();
    results.push(await runScenario(options[name]!));
    process.stderr.write(`bench: ${name} done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  }
  let backlog: BacklogResult | undefined;
  if (args.scenarios.includes('backlog')) {
    const started = performance.now();
    backlog = await runBacklog({
      records: args.backlog,
      waitingSpreadMs: args.backlogSpreadMs,
      fillConcurrency: 16,
      logLevel: base.logLevel,
    });
    process.stderr.write(`bench: backlog done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  }
  let control: ControlResult | undefined;
  if (args.scenarios.includes('control')) {
    const started = performance.now();
    control = await runControl({
      samples: args.samples,
      modemLatencyMs: CONTROL_MODEM_LATENCY_MS,
      logLevel: base.logLevel,
    });
    process.stderr.write(`bench: control done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  }
  let outage: OutageResult[] | undefined;
  if (args.scenarios.includes('outage')) {
    const started = performance.now();
    outage = await runOutage({ records: args.outageRecords, outageMs: args.outageSec * 1000 });
    process.stderr.write(`bench: outage done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  }
  let healing: HealingRow[] | undefined;
  if (args.scenarios.includes('healing')) {
    const started = performance.now();
    healing = await runHealing({ samples: args.healingSamples });
    process.stderr.write(`bench: healing done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  }
  let daemonProcess: ProcessResults | undefined;
  const processArgs = {
    ...PROCESS_DEFAULTS,
    idleSec: args.idleSec,
    modems: Math.max(2, args.modems),
    env: {},
    nodeArgs: [],
  };
  if (args.scenarios.includes('process')) {
    if (!hasSocat)
      process.stderr.write('bench: socat is not installed: skipping scenario process (apt-get install socat)\n');
    else {
      const started = performance.now();
      daemonProcess = await runProcessBench(processArgs, (l) => process.stderr.write(l));
      process.stderr.write(`bench: process done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    }
  }
  const spool = await spoolCost(50);
  if (args.json) {
    const pdu = results.find((r) => r.samplePdu)?.samplePdu;
    const steps = pdu ? smsExchange(pdu) : [];
    process.stdout.write(
      JSON.stringify(
        {
          node: process.version,
          platform: `${process.platform}/${process.arch}`,
          cpus: cpus().length,
          samples: args.samples,
          burst: args.burst,
          baud: BAUD,
          wire: {
            steps,
            totalBytes: steps.reduce((s, x) => s + x.bytes, 0),
            totalMs: wireTimeMs(
              steps.reduce((s, x) => s + x.bytes, 0),
              BAUD,
            ),
            beforePostMs: wireTimeMs(
              steps.filter((s) => s.beforePost).reduce((s, x) => s + x.bytes, 0),
              BAUD,
            ),
          },
          spool,
          scenarios: results,
          ...(backlog ? { backlog } : {}),
          ...(control ? { control } : {}),
          ...(outage ? { outage } : {}),
          ...(healing ? { healing } : {}),
          ...(daemonProcess ? { process: daemonProcess } : {}),
          ...(cli ? { cli } : {}),
        },
        null,
        2,
      ) + '\n',
    );
  } else {
    if (cli) process.stdout.write(`${cliReport(cli, 10)}\n\n`);
    process.stdout.write(report(args, results, spool, backlog, control, outage, healing));
    if (daemonProcess) process.stdout.write(`\n${processReport(daemonProcess, processArgs)}\n`);
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
    // Everything was stopped; if a handle still keeps the process alive, say which instead of hanging.
    setTimeout(() => {
      process.stderr.write(
        `bench: still running 5 s after the end; open handles: ${process.getActiveResourcesInfo().join(', ')}\n`,
      );
      process.exit(code);
    }, 5000).unref();
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`bench: ${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
