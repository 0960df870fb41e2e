/**
 * `pulsa-bridge queue ...`: what is in the spool and in which state, and the operator's repairs (retry, drop). Opens
 * the spool as a 'client' (no lock, no start-up repairs) whether the daemon runs or not; after retry/drop the running
 * daemon gets SIGHUP and rescans. `ls` and `stats` say whether a daemon holds the spool. Times in the local zone;
 * --json keeps ISO UTC and, on failure, also prints {"error", "code", "hint"?} on stdout (the SPOOL_* code tells the
 * cause apart); stderr and exit code 1 are the same either way.
 */
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import { BridgeError, errorMessage, SpoolError } from '../errors.js';
import { localClock, localTime, looksLikeIsoTime } from '../time-format.js';
import { MIN_ID_PREFIX } from '../spool/operator.js';
import type { Spool } from '../spool/store.js';
import { spoolFrom, spoolHolder, type SpoolHolder } from './spool-access.js';
import type { AnyRecord, SpoolArea } from '../spool/types.js';
import { table } from './format.js';
import { configPath, printJson, type Io } from './io.js';
import { UsageError, wholeNumber } from './usage.js';
import { safeJson, safeText } from '../terminal-text.js';

interface SpoolCliOptions {
  spool?: string;
  config?: string;
  json?: boolean;
}

const AREAS: SpoolArea[] = ['pending', 'sent', 'dead', 'ignored', 'quarantine', 'parts'];

function daemonLine(d: SpoolHolder): string {
  if (d.running === true) return `daemon: running (pid ${d.pid})\n`;
  if (d.running === false) return 'daemon: not running\n';
  return `daemon: unknown (${d.error ?? 'lock unreadable'})\n`;
}

function withSpoolOptions(cmd: Command): Command {
  return cmd
    .option('-s, --spool <dir>', 'spool directory (default: spool.dir of the config)')
    .option('-c, --config <file>', 'config file to take spool.dir from')
    .option('--json', 'print JSON');
}

function age(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return '-';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}

function oneLine(s: string, max = 60): string {
  const flat = s.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function summary(area: SpoolArea, r: AnyRecord): string[] {
  if (r.kind === 'sms') {
    const state =
      area === 'pending'
        ? r.attempts > 0
          ? `retry ${r.attempts} ${r.nextAttemptAt ? `at ${localClock(r.nextAttemptAt)}` : ''}`.trim()
          : 'due'
        : area;
    return [
      r.id,
      area,
      r.sim.modem,
      r.sender,
      age(r.receivedAt),
      state,
      oneLine(r.lastError ?? r.deadReason ?? r.text),
    ];
  }
  if (r.kind === 'part')
    return [r.id, area, r.sim.modem, r.sender, age(r.receivedAt), `part ${r.sequence}/${r.total}`, oneLine(r.text)];
  return [r.id, area, r.modem, '-', age(r.receivedAt), 'quarantined', oneLine(r.reason)];
}

/** An action that, with --json, also prints its failure as JSON on stdout before passing it on. */
function withJsonError<A extends unknown[]>(
  io: Io,
  action: (...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await action(...args);
    } catch (err) {
      const cmd = args[args.length - 1] as Command; // commander passes the command last
      if (cmd.opts<SpoolCliOptions>().json) {
        const view =
          err instanceof BridgeError
            ? { error: err.message, code: err.code, ...(err.hint ? { hint: err.hint } : {}) }
            : { error: errorMessage(err) };
        printJson(io, view);
      }
      throw err;
    }
  };
}

/** The commands this module adds to the program (cli.ts). */
export function commands(io: Io): Command[] {
  return [queueCommands(io)];
}

export function queueCommands(io: Io, openSpool: (o: SpoolCliOptions) => Promise<Spool> = spoolFrom): Command {
  const queue = new Command('queue').description(summaryOf('queue'));
  const json = (v: unknown) => printJson(io, v);
  /** Every command closes what it opened (a client holds no lock, but close() waits for its writes). */
  const opened: Spool[] = [];
  const open = async (o: SpoolCliOptions): Promise<Spool> => {
    const spool = await openSpool(o);
    opened.push(spool);
    return spool;
  };
  queue.hook('postAction', async () => {
    for (const spool of opened.splice(0)) await spool.close();
  });

  withSpoolOptions(queue.command('ls'))
    .description('list records (default: pending and dead)')
    .option('-a, --area <area...>', `areas to list: ${AREAS.join(', ')}, or all`)
    .option(
      '-n, --limit <n>',
      'at most this many per area',
      wholeNumber('a number of records (a whole number >= 1)', 1),
      100,
    )
    .action(
      withJsonError(io, async (opts: SpoolCliOptions & { area?: string[]; limit: number }) => {
        const spool = await open(opts);
        const wanted = opts.area?.includes('all') ? AREAS : ((opts.area ?? ['pending', 'dead']) as SpoolArea[]);
        for (const a of wanted)
          if (!AREAS.includes(a))
            throw new BridgeError(
              'CONFIG_INVALID',
              `--area: unknown area ${JSON.stringify(a)} (one of ${AREAS.join(', ')}, all)`,
            );
        const out: Array<{ area: SpoolArea; record: AnyRecord }> = [];
        for (const a of wanted)
          for (const r of await spool.list(a, { limit: opts.limit })) out.push({ area: a, record: r });
        const daemon = await spoolHolder(spool.dir);
        if (opts.json) return json({ daemon, records: out });
        io.out(daemonLine(daemon));
        if (out.length === 0) return io.out(`nothing in ${wanted.join(', ')}\n`);
        io.out(
          table([
            ['ID', 'AREA', 'MODEM', 'SENDER', 'AGE', 'STATE', 'TEXT / LAST ERROR'],
            ...out.map((x) => summary(x.area, x.record).map((cell) => safeText(cell))),
          ]),
        );
      }),
    );

  withSpoolOptions(queue.command('show'))
    .description('show one record in full (any area)')
    .argument('<id>', 'record id (from `queue ls`)')
    .action(
      withJsonError(io, async (id: string, opts: SpoolCliOptions) => {
        const spool = await open(opts);
        const found = await spool.get(id);
        if (!found)
          throw new SpoolError('not-found', `no record ${id} in the spool`, {
            hint: 'list ids with `pulsa-bridge queue ls --area all`',
          });
        if (opts.json) return json(found);
        io.out(`area: ${found.area}\n`);
        for (const [k, v] of Object.entries(found.record)) {
          // Text from an SMS sender or a modem: control characters shown as escapes (terminal-text.ts).
          if (k === 'text') io.out(`text:\n  ${safeText(String(v), { multiline: true }).replace(/\n/g, '\n  ')}\n`);
          else if (typeof v === 'string' && looksLikeIsoTime(v))
            io.out(`${k}: ${localTime(v)}\n`); // one zone: local
          else io.out(`${safeText(k)}: ${typeof v === 'object' ? safeJson(v) : safeText(String(v))}\n`);
        }
      }),
    );

  withSpoolOptions(queue.command('retry'))
    .description(
      'return a dead record to pending (attempts reset), or every dead record with --dead; a record quarantined for its integrity check (spool.key lost or replaced) is released, signed with the spool key, after you checked it with `queue show`',
    )
    .argument('[id]', 'record id')
    .option('--dead', 'retry every dead record')
    .action(
      withJsonError(io, async (id: string | undefined, opts: SpoolCliOptions & { dead?: boolean }) => {
        if (!id && !opts.dead) throw new UsageError('give a record id, or --dead for every dead record');
        const spool = await open(opts);
        if (opts.dead) {
          const n = await spool.retryAllDead();
          if (opts.json) return json({ retried: n });
          return io.out(`${n} dead record(s) returned to pending\n`);
        }
        const back = await spool.retry(id!);
        if (opts.json)
          return json(back.id === id ? { retried: 1, id } : { retried: 1, id: back.id, released: id, area: back.area });
        io.out(
          back.id === id
            ? `${id} returned to ${back.area}\n`
            : `quarantined ${id} released into ${back.area} as ${back.id}\n`,
        );
      }),
    );

  withSpoolOptions(queue.command('drop'))
    .description(
      'remove a record for good (pending, dead, ignored, quarantine, or a stray multipart part); sent records are kept for audit',
    )
    .argument('<id>', `record id, or an unambiguous start of it (at least ${MIN_ID_PREFIX} characters)`)
    .action(
      withJsonError(io, async (id: string, opts: SpoolCliOptions) => {
        const spool = await open(opts);
        const r = await spool.drop(id);
        if (opts.json) return json({ dropped: r.id, area: r.area });
        io.out(`dropped ${r.id} from ${r.area}\n`);
      }),
    );

  withSpoolOptions(queue.command('stats'))
    .description('depth, oldest pending age, counts per area, last delivery error')
    .action(
      withJsonError(io, async (opts: SpoolCliOptions) => {
        const spool = await open(opts);
        const s = await spool.stats();
        const dead = await spool.list('dead', { limit: 1_000_000 });
        const pending = await spool.list('pending', { limit: 1_000_000 });
        const lastFailed = [...pending, ...dead]
          .filter(
            (r): r is Extract<AnyRecord, { kind: 'sms' }> =>
              r.kind === 'sms' && (r.lastError !== undefined || r.deadReason !== undefined),
          )
          .sort((a, b) => (a.nextAttemptAt ?? a.receivedAt).localeCompare(b.nextAttemptAt ?? b.receivedAt))
          .at(-1);
        const lastError =
          s.lastError ??
          (lastFailed ? { id: lastFailed.id, error: lastFailed.lastError ?? lastFailed.deadReason ?? '' } : undefined);
        const daemon = await spoolHolder(spool.dir);
        const view = { ...s, lastError, daemon };
        if (opts.json) return json(view);
        io.out(
          daemonLine(daemon) +
            `pending:    ${s.pending}${s.oldestPendingAgeMs !== undefined ? ` (oldest ${age(new Date(Date.now() - s.oldestPendingAgeMs).toISOString())})` : ''}\n` +
            `dead:       ${s.dead}\nsent:       ${s.sent}\nignored:    ${s.ignored}\nquarantine: ${s.quarantine}\nparts:      ${s.parts}\n` +
            `last error: ${lastError ? `${lastError.id}: ${lastError.error}` : '-'}\n`,
        );
      }),
    );
  return queue;
}
