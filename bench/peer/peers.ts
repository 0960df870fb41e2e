/**
 * The daemons the peer benchmark compares, each started as its own process on a modem path (a pseudo-terminal) with a
 * webhook URL, and stopped again:
 *   - pulsa-bridge: `node bin/pulsa-bridge run --config FILE` with a config in production defaults (fsynced spool,
 *     60 s safety sweep, log level info) except the port, the webhook and the sender list.
 *   - gammu-smsd (Debian's package): a gammurc/smsdrc pair in a work directory, `connection = at115200` on the same
 *     path, `RunOnReceive` = a small sh script that POSTs `{"sender","message"}` with jq + curl. gammu-smsd links the
 *     parts of a multipart message itself and hands them to the script together: the text is `DECODED_1_TEXT` when it
 *     decoded a concatenated message, else SMS_1_TEXT..SMS_n_TEXT joined. It runs with LC_ALL=C.UTF-8: gammu-smsd
 *     converts texts to the console's charset, and under the C locale every non-ASCII character would become '?'.
 *
 * Contract: start() resolves once the process is spawned (readiness is the caller's business: its first SMS
 * delivered); stop() sends SIGTERM, then SIGKILL after `stopTimeoutMs`, and resolves once the process has exited.
 * A guard shell kills the daemon if this process dies without stopping it (so no daemon outlives a killed bench).
 * ensureGammu() installs the missing packages with apt-get (sudo when not root), bounded by a timeout.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { unitNodeFlags } from '../process/unit-flags.js';
import { SENDER } from './workload.js';

export interface PeerContext {
  /** A fresh directory for this peer's files. */
  workDir: string;
  /** The pseudo-terminal the virtual modem is served on. */
  modemPath: string;
  /** Full URL of the webhook endpoint. */
  webhookUrl: string;
  /** The receiver's base URL (pulsa-bridge appends /webhook/sms-gateway). */
  webhookBaseUrl: string;
}

export interface RunningPeer {
  pid: number;
  /** Why the process ended, when it did (exit code or signal), else undefined. */
  exited(): string | undefined;
  /** Last lines of the daemon's own log (for reports of what went wrong). */
  logTail(lines?: number): string;
  stop(): Promise<void>;
}

export interface PeerSpec {
  id: string;
  label: string;
  /** The peer's polling period in ms (0 for event-driven): single messages are injected after a pause of U(0, max(this, 1000)). */
  pollPeriodMs: number;
  /** What this configuration sets, for the report. */
  settings: string;
  start(ctx: PeerContext): Promise<RunningPeer>;
}

const STOP_TIMEOUT_MS = 10_000;

function tail(path: string, lines: number): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Kills `pid` when this process dies by any means (its stdin pipe closes); never keeps the event loop alive. */
function guard(pid: number): ChildProcess {
  const g = spawn('sh', ['-c', `read _ ; kill -9 ${pid} 2>/dev/null`], { stdio: ['pipe', 'ignore', 'ignore'] });
  g.on('error', () => undefined); // no guard: a killed bench may leave the daemon running, nothing else changes
  g.unref();
  (g.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return g;
}

export function launch(command: string, args: string[], logPath: string, env: NodeJS.ProcessEnv): RunningPeer {
  const fd = openSync(logPath, 'a');
  const child = spawn(command, args, { stdio: ['ignore', fd, fd], env });
  closeSync(fd);
  let ended: string | undefined;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      ended = signal ?? `exit code ${code}`;
      resolve();
    });
    child.once('error', (err) => {
      ended = `could not start ${command}: ${err.message}`;
      resolve();
    });
  });
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  const g = guard(child.pid);
  return {
    pid: child.pid,
    exited: () => ended,
    logTail: (lines = 15) => tail(logPath, lines),
    stop: async () => {
      if (ended === undefined) {
        child.kill('SIGTERM');
        const forced = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exit;
        clearTimeout(forced);
      }
      if (g.exitCode === null && g.signalCode === null) g.kill('SIGKILL');
    },
  };
}

// ------------------------------------------------------------------ pulsa-bridge

/** bin/pulsa-bridge, as systemd runs it (dist/src/cli.js only exports main()). */
export const BIN = fileURLToPath(new URL('../../../bin/pulsa-bridge', import.meta.url));

export const bridgePeer: PeerSpec = {
  id: 'bridge',
  label: 'pulsa-bridge',
  pollPeriodMs: 0,
  settings: `production defaults: +CMTI -> read at once, fsynced spool, 60 s safety sweep (AT+CMGL), log level info to a file; node ${unitNodeFlags().join(' ')} (the systemd unit's ExecStart)`,
  start: async (ctx) => {
    const configPath = join(ctx.workDir, 'config.json');
    const config = {
      webhook: { baseUrl: ctx.webhookBaseUrl },
      spool: { dir: join(ctx.workDir, 'spool') },
      modems: [{ name: 'peer', port: ctx.modemPath, baudRate: 115200, senders: [SENDER] }],
      log: { level: 'info', pretty: false },
    };
    await writeFile(configPath, JSON.stringify(config, null, 2));
    // Node's flags as the systemd unit runs it (bench/process/unit-flags.ts reads them from the unit file).
    return launch(
      process.execPath,
      [...unitNodeFlags(), BIN, 'run', '--config', configPath],
      join(ctx.workDir, 'bridge.log'),
      process.env,
    );
  },
};

// ------------------------------------------------------------------ gammu-smsd

/** jq builds the JSON from the environment (byte-exact, no shell quoting); curl -f fails on a non-2xx answer. */
const RUN_ON_RECEIVE = `#!/bin/sh
# gammu-smsd RunOnReceive: POST {"sender","message"} of the message just received to $1.
jq -n '{sender: $ENV.SMS_1_NUMBER,
        message: (if (($ENV.DECODED_PARTS // "0") | tonumber) >= 1 and $ENV.DECODED_1_TEXT != null
                  then $ENV.DECODED_1_TEXT
                  else [range(1; ($ENV.SMS_MESSAGES | tonumber) + 1) | $ENV["SMS_\\(.)_TEXT"] // ""] | join("") end)}' |
  curl -sS -f --max-time 10 -H 'Content-Type: application/json' --data-binary @- "$1" >/dev/null
`;

function gammuPeer(
  id: string,
  label: string,
  settings: string,
  service: 'files' | 'null',
  extra: Record<string, string>,
  pollPeriodMs: number,
): PeerSpec {
  return {
    id,
    label,
    pollPeriodMs,
    settings,
    start: async (ctx) => {
      const script = join(ctx.workDir, 'post.sh');
      await writeFile(script, RUN_ON_RECEIVE);
      await chmod(script, 0o755);
      const lines = [
        '[gammu]',
        `device = ${ctx.modemPath}`,
        'connection = at115200',
        '',
        '[smsd]',
        `service = ${service}`,
        `logfile = ${join(ctx.workDir, 'smsd.log')}`,
        `RunOnReceive = ${script} ${ctx.webhookUrl}`,
      ];
      if (service === 'files') {
        for (const dir of ['inbox', 'outbox', 'sent', 'error'])
          await mkdir(join(ctx.workDir, dir), { recursive: true });
        lines.push(...['inbox', 'outbox', 'sent', 'error'].map((d) => `${d}path = ${join(ctx.workDir, d)}/`));
      }
      for (const [k, v] of Object.entries(extra)) lines.push(`${k} = ${v}`);
      const rc = join(ctx.workDir, 'smsdrc');
      await writeFile(rc, lines.join('\n') + '\n');
      return launch('gammu-smsd', ['-c', rc], join(ctx.workDir, 'smsd.out'), { ...process.env, LC_ALL: 'C.UTF-8' });
    },
  };
}

/** Nothing set but what the comparison needs (modem path, RunOnReceive, a log file; FILES storage as usually deployed). */
export const gammuDefaultsPeer = gammuPeer(
  'gammu-defaults',
  'gammu-smsd defaults',
  'Service = files, everything else default: ReceiveFrequency = 15, LoopSleep = 1, StatusFrequency = 60, CheckSecurity/CheckBattery/CheckSignal/CheckNetwork = 1, MultipartTimeout = 600',
  'files',
  {},
  15_000,
);

/** Everything in the main loop that is not receiving turned off, and no sleep between loops. */
export const gammuFastestPeer = gammuPeer(
  'gammu-fastest',
  'gammu-smsd fastest',
  'Service = null (no storage), ReceiveFrequency = 0, LoopSleep = 0 (no sleep: a busy loop), StatusFrequency = 0, CheckSecurity = 0, CheckBattery = 0, CheckSignal = 0, CheckNetwork = 0',
  'null',
  {
    ReceiveFrequency: '0',
    LoopSleep: '0',
    StatusFrequency: '0',
    CheckSecurity: '0',
    CheckBattery: '0',
    CheckSignal: '0',
    CheckNetwork: '0',
  },
  0,
);

function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore', timeout: 5000 }).status === 0;
}

/**
 * Makes gammu-smsd, jq and curl available (Debian packages of the same names). Returns undefined when they are there,
 * else why they are not.
 */
export function ensureGammu(log: (line: string) => void): string | undefined {
  const missing = ['gammu-smsd', 'jq', 'curl'].filter((c) => !onPath(c));
  if (missing.length === 0) return undefined;
  const asRoot = process.getuid?.() === 0;
  const cmd = [...(asRoot ? [] : ['sudo', '-n']), 'apt-get', 'install', '-y', ...missing];
  log(`bench:peer: installing ${missing.join(', ')}: ${cmd.join(' ')}\n`);
  const r = spawnSync(cmd[0]!, cmd.slice(1), {
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
    timeout: 300_000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  const still = missing.filter((c) => !onPath(c));
  if (still.length === 0) return undefined;
  const why = r.error
    ? r.error.message
    : `exit ${r.status}: ${(r.stderr ?? '').trim().split('\n').slice(-2).join(' | ')}`;
  return `${still.join(', ')} not installed (${cmd.join(' ')} failed: ${why})`;
}
