/**
 * `npm run bench:peer`: pulsa-bridge against gammu-smsd on the same kind of virtual modem over a pseudo-terminal, each
 * daemon as its own process, one after the other: latency per SMS, a burst of 30 (multipart and UCS2 among them),
 * byte-exact texts, AT commands per SMS and per idle minute, CPU seconds and peak RSS. gammu-smsd runs twice: with its
 * defaults and with its fastest settings (peers.ts says which). Installs gammu-smsd (and jq, curl) with apt-get when
 * missing. Prints figures only (a table, or JSON with --json); asserts nothing; every wait is bounded, and a figure
 * that could not be measured is printed as '-' with the reason below the table.
 *
 *   node dist/bench/peer/run.js [--json] [--samples 20] [--idle-sec 60] [--skip-defaults] [--seed 1]
 */
import { cpus } from 'node:os';
import { measurePeer, type PeerResult } from './measure.js';
import { bridgePeer, ensureGammu, gammuDefaultsPeer, gammuFastestPeer, type PeerSpec } from './peers.js';
import { peerNotes, peerTable } from './report.js';

interface Args {
  json: boolean;
  samples: number;
  idleSec: number;
  skipDefaults: boolean;
  seed: number;
}

class UsageError extends Error {}

const USAGE =
  'usage: node dist/bench/peer/run.js [--json] [--samples N (20)] [--idle-sec S (60)] [--skip-defaults] [--seed N (1)]\n';

function parseArgs(argv: string[]): Args {
  const args: Args = { json: false, samples: 20, idleSec: 60, skipDefaults: false, seed: 1 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const int = (min: number, max: number) => {
      const v = argv[++i];
      const n = Number(v);
      if (v === undefined || !Number.isInteger(n) || n < min || n > max)
        throw new UsageError(`${a} expects an integer from ${min} to ${max}`);
      return n;
    };
    if (a === '--json') args.json = true;
    else if (a === '--samples') args.samples = int(1, 200);
    else if (a === '--idle-sec') args.idleSec = int(5, 3600);
    else if (a === '--skip-defaults') args.skipDefaults = true;
    else if (a === '--seed') args.seed = int(0, 2 ** 31);
    else if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else throw new UsageError(`unknown argument ${a} (try --help)`);
  }
  return args;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const log = (line: string) => process.stderr.write(line);
  const peers: PeerSpec[] = [bridgePeer];
  const skipped: string[] = [];
  const gammuMissing = ensureGammu(log);
  if (gammuMissing) skipped.push(`gammu-smsd not measured: ${gammuMissing}`);
  else {
    if (!args.skipDefaults) peers.push(gammuDefaultsPeer);
    peers.push(gammuFastestPeer);
  }
  const results: PeerResult[] = [];
  for (const peer of peers) {
    log(`bench:peer: ${peer.label}\n`);
    results.push(
      await measurePeer(peer, { samples: args.samples, burst: 30, idleSec: args.idleSec, seed: args.seed, log }),
    );
  }
  const machine = `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), Node ${process.version}, ${new Date().toISOString()}`;
  if (args.json) {
    process.stdout.write(JSON.stringify({ machine, args, results, skipped }, null, 2) + '\n');
    return;
  }
  process.stdout.write(`pulsa-bridge vs gammu-smsd on the virtual modem over a pseudo-terminal; ${machine}\n\n`);
  process.stdout.write(peerTable(results, args.samples, args.idleSec) + '\n\n');
  process.stdout.write(peerNotes(results) + '\n');
  for (const s of skipped) process.stdout.write(`${s}\n`);
}

main().then(
  // Child processes and the pty host are all stopped by now; exit even if a stray handle lingers.
  () => process.exit(0),
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`bench:peer: ${err.message}\n${USAGE}`);
      process.exit(2);
    }
    process.stderr.write(`bench:peer: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
