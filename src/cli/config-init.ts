/**
 * `pulsa-bridge config init [FILE]`: writes a first config from what `ports --probe` finds (one modem per recommended
 * AT port; with --simulate one virtual modem), with the placeholder webhook URL install.sh recognises, validated
 * before it is written. An existing file is never overwritten without --force (checked before probing and again
 * atomically); written mode 0640 via a temporary file. No AT port found: nothing written, exit 1 with a hint.
 */
import { Command } from 'commander';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseConfig } from '../config.js';
import { BridgeError, errorMessage } from '../errors.js';
import { isProbeCandidate, recommendAtPorts, type ProbedPort } from './ports-format.js';
import { configPath, printJson, type Io } from './io.js';
import { baudRates, wholeNumber } from './usage.js';
import { virtualPortFor } from '../serial/port-kind.js';

/** The base URL written until the operator sets the real one (install.sh looks for `convert.example.com`). */
export const PLACEHOLDER_BASE_URL = 'https://convert.example.com/api/v1/convert-pulsa';
const CONFIG_MODE = 0o640;

export interface InitModem {
  name: string;
  port: string;
  profile?: string;
  senders: string[];
}

/** The config file's content (PURE): placeholders for the webhook, the modems found, defaults left out. */
export function initialConfig(modems: readonly InitModem[]): Record<string, unknown> {
  return {
    webhook: { baseUrl: PLACEHOLDER_BASE_URL, headers: {}, hmacSecret: null },
    spool: { dir: '/var/lib/pulsa-bridge/spool' },
    modems: modems.map((m) => ({ ...m })),
    log: { level: 'info' },
  };
}

/** Modem entries from the probe's recommendation (PURE): names from the detected profile, numbered per profile. */
export function modemsFromProbe(rows: readonly ProbedPort[], senders: string[]): InitModem[] {
  const counts = new Map<string, number>();
  return recommendAtPorts(rows).map((rec) => {
    const row = rows.find((r) => (r.port.byIdPath ?? r.port.path) === rec.path);
    const profile = row?.probe?.profile;
    const stem = profile && profile !== 'generic' ? profile : 'modem';
    const n = (counts.get(stem) ?? 0) + 1;
    counts.set(stem, n);
    return { name: `${stem}-${n}`, port: rec.path, profile: profile ?? 'auto', senders: [...senders] };
  });
}

async function fileOwner(file: string): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const st = await fsp.stat(file);
    return { uid: st.uid, gid: st.gid };
  } catch {
    return undefined; // no such file: nothing to keep
  }
}

/** tmp (0640) -> link (no overwrite) or rename (--force). */
async function writeConfigFile(file: string, text: string, force: boolean): Promise<void> {
  const dir = path.dirname(file);
  await fsp.mkdir(dir, { recursive: true, mode: 0o750 });
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const replaced = force ? await fileOwner(file) : undefined;
  try {
    await fsp.writeFile(tmp, text, { flag: 'wx', mode: CONFIG_MODE });
    await fsp.chmod(tmp, CONFIG_MODE); // whatever the umask
    if (typeof process.getuid === 'function' && process.getuid() === 0) {
      const owner = replaced ?? { uid: 0, gid: (await fsp.stat(dir)).gid };
      await fsp.chown(tmp, owner.uid, owner.gid);
    }
    if (force) await fsp.rename(tmp, file);
    else await fsp.link(tmp, file);
  } finally {
    await fsp.rm(tmp, { force: true });
  }
}

function refuseExisting(file: string): BridgeError {
  return new BridgeError('CONFIG_INVALID', `${file} already exists; not overwritten`, {
    hint: `edit it (sudoedit ${file}), or run \`pulsa-bridge config init --force ${file}\` to replace it`,
  });
}

export function configInitCommand(io: Io): Command {
  return new Command('init')
    .description('write a first config from `ports --probe`: one modem per AT port found, placeholders for the webhook')
    .argument('[file]', 'config file to write', configPath())
    .option('--force', 'overwrite an existing file')
    .option('--simulate', 'one virtual modem (port virtual:virtual-1) instead of probing the ports')
    .option(
      '--senders <ids>',
      'accepted operator sender ids, comma-separated',
      (v: string) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== ''),
      ['858'],
    )
    .option('--baud <rates>', 'baud rates to probe, comma-separated', baudRates, [115200])
    .option(
      '--timeout <ms>',
      'per-command probe timeout in ms',
      wholeNumber('a timeout in ms (a whole number >= 1)', 1),
      1000,
    )
    .option('--all', 'probe plain UARTs without USB ids too (ttyS*, ttyAMA*)')
    .option('--json', 'print what was written as JSON')
    .action(
      async (
        file: string,
        opts: {
          force?: boolean;
          simulate?: boolean;
          senders: string[];
          baud: number[];
          timeout: number;
          all?: boolean;
          json?: boolean;
        },
      ) => {
        if (!opts.force && (await fileOwner(file))) throw refuseExisting(file);
        let modems: InitModem[];
        if (opts.simulate) {
          modems = [{ name: 'virtual-1', port: virtualPortFor('virtual-1'), senders: opts.senders }];
        } else {
          // The probe and the serial addon load here, not with the module: `config check` shares it and needs neither.
          const [{ probePorts }, { USB_FINGERPRINTS }, { listPorts }] = await Promise.all([
            import('../modem/probe.js'),
            import('../modem/profiles/index.js'),
            import('../serial/ports.js'),
          ]);
          const listed = io.ports
            ? await io.ports.list()
            : await listPorts({
                fingerprints: USB_FINGERPRINTS.map((r) => ({
                  vendorId: r.vendorId,
                  ...(r.productId ? { productId: r.productId } : {}),
                  profile: r.profile ?? 'generic',
                  description: r.description,
                })),
              });
          const candidates = listed.ports.filter((p) => isProbeCandidate(p, opts.all === true));
          const probes = await probePorts(
            candidates.map((p) => p.path),
            { baudRates: opts.baud, timeoutMs: opts.timeout },
          );
          const rows: ProbedPort[] = candidates.map((port, i) => ({ port, probe: probes[i]! }));
          modems = modemsFromProbe(rows, opts.senders);
          if (modems.length === 0) {
            throw new BridgeError(
              'MODEM_SILENT',
              `no serial port answered AT (probed ${candidates.length} of ${listed.ports.length}); nothing written`,
              {
                hint: 'is the modem plugged in and not held by ModemManager? `pulsa-bridge ports --probe` shows each port; `--simulate` writes a config for the virtual modem',
              },
            );
          }
        }
        const content = initialConfig(modems);
        try {
          parseConfig(content, {});
        } catch (err) {
          throw new BridgeError('CONFIG_INVALID', `the config to write does not validate: ${errorMessage(err)}`, {
            cause: err,
          });
        }
        try {
          await writeConfigFile(file, `${JSON.stringify(content, null, 2)}\n`, opts.force === true);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw refuseExisting(file);
          throw new BridgeError('CONFIG_INVALID', `cannot write ${file}: ${errorMessage(err)}`, {
            cause: err,
            hint: 'run it with sudo for /etc/pulsa-bridge',
          });
        }
        if (opts.json) return printJson(io, { file, modems });
        io.out(`wrote ${file} (mode 0640) with ${modems.length} modem(s):\n`);
        for (const m of modems)
          io.out(`  ${m.name}: ${m.port}${m.profile ? ` [${m.profile}]` : ''}, senders ${m.senders.join(', ')}\n`);
        io.out(
          'next steps:\n' +
            `  1. sudoedit ${file}    webhook.baseUrl (now ${PLACEHOLDER_BASE_URL}), modems[].senders; a SIM PIN as "pin": "env:PB_PIN" with PB_PIN=... in /etc/pulsa-bridge/env\n` +
            `  2. pulsa-bridge config check ${file}\n` +
            '  3. sudo systemctl enable --now pulsa-bridge    (or: pulsa-bridge run --config FILE)\n' +
            '  4. pulsa-bridge status\n',
        );
      },
    );
}
