/**
 * `pulsa-bridge simulate --link PATH`: serves the virtual modem on a pseudo-terminal, so the real daemon (native
 * serial binding, a real config with `"port": PATH`) can be run, shown and trained on without hardware. Reads
 * commands from standard input to inject SMS and faults; ends on `quit`, end of input, Ctrl-C or SIGTERM.
 * With `--state FILE` the SIM's stored SMS, its PIN state and the SMS the network holds are loaded at start and saved
 * when the simulator ends (not after SIGKILL), so stopping and starting it again on the same --link is an unplug and
 * replug of the same SIM. The simulator is loaded when the command runs, not for its --help or a usage error.
 */
import { summaryOf } from './command-list.js';
import { Command, InvalidArgumentError, Option } from 'commander';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { errorMessage } from '../errors.js';
import type { PtyHost } from '../virtual-modem/pty-host.js';
import type { InjectSmsOptions, SimSnapshot } from '../virtual-modem/virtual-modem.js';
import { VIRTUAL_QUIRKS, type VirtualQuirk } from '../virtual-modem/virtual-modem-types.js';
import type { Io } from './io.js';
import { onStopSignal } from './lifecycle.js';
import { wholeNumber } from './usage.js';

const SIMULATE_HELP = `commands (one per line):
  sms <sender> <text...>    an SMS arrives (e.g. sms 858 Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6281...)
  inject <json>             an SMS given exactly: {"from","text"[,"encoding":"gsm7"|"ucs2","concatRef","concatRefBits",
                            "pid","dcs"]} (pid 64: a Type 0, which the bridge discards; dcs 200: a voicemail indication)
  garbage                   noise bytes on the line
  stall <ms>                the modem stops answering for <ms> ms
  reboot                    the modem restarts (banners; CNMI lost)
  reboot silent             the modem restarts without any banner (CNMI lost unannounced)
  reboot autobaud           silent, and its URCs held until it sees an AT (a SIM800 in auto-baud mode)
  reboot banner <line>      the modem restarts printing <line> instead of its own banners (another family's)
  full                      fill the SIM storage
  list                      SMS stored on the SIM (and in the modem's memory with --quirk store-in-me)
  state                     one JSON line: SIM state, stored and held SMS, PIN entries seen
  help, quit`;

/** The commands this module adds to the program (cli.ts). */
export function commands(io: Io): Command[] {
  return [simulateCommand(io)];
}

export function simulateCommand(io: Io): Command {
  return new Command('simulate')
    .description(summaryOf('simulate'))
    .requiredOption('-l, --link <path>', 'path to create for the bridge to open, e.g. /tmp/pulsa-modem')
    .addOption(
      new Option('--profile <id>', 'behave like this modem family')
        .choices(['generic', 'simcom', 'huawei'])
        .default('simcom'),
    )
    .option('--pin <pin>', 'the SIM starts locked with this PIN')
    .option(
      '--baud <rate>',
      'pace the line like a UART at this baud rate (default: memory speed)',
      wholeNumber('a baud rate such as 115200 or 9600', 1),
    )
    .option(
      '--storage <n>',
      'SMS slots on the SIM (default 30)',
      wholeNumber('a number of slots (a whole number >= 1)', 1),
    )
    .option(
      '--state <file>',
      'load the SIM and network state from this file at start (if it exists), save it there at the end',
    )
    .addOption(
      new Option(
        '--quirk <name>',
        `a behaviour of real devices (repeatable): ${VIRTUAL_QUIRKS.join(', ')} (docs/modems.md)`,
      )
        .choices([...VIRTUAL_QUIRKS])
        .argParser((value: string, previous: VirtualQuirk[] | undefined) => {
          if (!(VIRTUAL_QUIRKS as readonly string[]).includes(value))
            throw new InvalidArgumentError(`one of ${VIRTUAL_QUIRKS.join(', ')}`);
          return [...(previous ?? []), value as VirtualQuirk];
        }),
    )
    .action(
      async (opts: {
        link: string;
        profile: 'generic' | 'simcom' | 'huawei';
        pin?: string;
        baud?: number;
        storage?: number;
        state?: string;
        quirk?: VirtualQuirk[];
      }) => {
        const { VirtualModem } = await import('../virtual-modem/virtual-modem.js');
        const { hostVirtualModemOnPty } = await import('../virtual-modem/pty-host.js');
        const storageCapacity = opts.storage;
        const vm = new VirtualModem({
          path: `virtual:pty:${opts.link}`,
          profile: opts.profile,
          ...(opts.pin ? { pin: opts.pin } : {}),
          ...(storageCapacity ? { storageCapacity } : {}),
          ...(opts.quirk && opts.quirk.length > 0 ? { quirks: opts.quirk } : {}),
        });
        if (opts.state) {
          const saved = await readFile(opts.state, 'utf8').catch((err: NodeJS.ErrnoException) => {
            if (err.code === 'ENOENT') return undefined;
            throw err;
          });
          if (saved !== undefined) vm.restore(JSON.parse(saved) as SimSnapshot);
        }
        const paceBaud = opts.baud;
        const host: PtyHost = await hostVirtualModemOnPty(vm, {
          linkPath: opts.link,
          ...(paceBaud ? { paceBaud } : {}),
        });
        io.out(
          `virtual ${opts.profile} modem on ${opts.link}${opts.quirk?.length ? ` (quirks: ${opts.quirk.join(', ')})` : ''}; type \`help\` for commands\n`,
        );
        const rl = createInterface({ input: io.input ?? process.stdin, terminal: false });
        const offStopSignal = onStopSignal(() => rl.close());
        const done = new Promise<void>((resolve) => rl.on('close', resolve));
        rl.on('line', (line) => {
          const [cmd, ...rest] = line.trim().split(/\s+/);
          try {
            switch (cmd) {
              case undefined:
              case '':
                break;
              case 'sms': {
                const [from, ...words] = rest;
                if (!from || words.length === 0) throw new Error('usage: sms <sender> <text...>');
                const r = vm.injectSms({ from, text: words.join(' ') });
                io.out(
                  `sms from ${from}: ${r.pdus.length} part(s)${r.indexes.length ? `, stored at ${r.indexes.join(', ')}` : ''}${r.held ? `, ${r.held} held by the network` : ''}\n`,
                );
                break;
              }
              case 'inject': {
                const json = line.trim().slice('inject'.length).trim();
                const o = JSON.parse(json) as Partial<InjectSmsOptions>;
                if (typeof o.from !== 'string' || typeof o.text !== 'string')
                  throw new Error('usage: inject {"from":"858","text":"..."}');
                const r = vm.injectSms({
                  from: o.from,
                  text: o.text,
                  ...(o.encoding ? { encoding: o.encoding } : {}),
                  ...(o.concatRef !== undefined ? { concatRef: o.concatRef } : {}),
                  ...(o.concatRefBits ? { concatRefBits: o.concatRefBits } : {}),
                  ...(typeof o.pid === 'number' ? { pid: o.pid } : {}),
                  ...(typeof o.dcs === 'number' ? { dcs: o.dcs } : {}),
                });
                io.out(
                  `sms from ${o.from}: ${r.pdus.length} part(s)${r.indexes.length ? `, stored at ${r.indexes.join(', ')}` : ''}${r.held ? `, ${r.held} held by the network` : ''}\n`,
                );
                break;
              }
              case 'state':
                io.out(
                  `state ${JSON.stringify({
                    sim: vm.sim,
                    stored: vm.storedMessages().length,
                    held: vm.heldBySmscCount,
                    dropped: vm.droppedForFullStorage,
                    pinEntries: vm.commandLog().filter((l) => /\+CPIN="?\d/i.test(l)).length,
                  })}\n`,
                );
                break;
              case 'garbage':
                vm.injectGarbage();
                io.out('noise sent\n');
                break;
              case 'stall': {
                const ms = Number(rest[0]);
                if (!Number.isFinite(ms) || ms <= 0) throw new Error('usage: stall <ms>');
                vm.stall(ms);
                io.out(`modem silent for ${ms} ms\n`);
                break;
              }
              case 'reboot':
                if (rest[0] === 'silent') {
                  vm.reboot({ silent: true });
                  io.out('modem rebooting silently\n');
                } else if (rest[0] === 'autobaud') {
                  vm.reboot({ silent: true, holdUntilAt: true });
                  io.out('modem rebooting silently\n');
                } else if (rest[0] === 'banner') {
                  const banner = rest.slice(1).join(' ');
                  if (!banner) throw new Error('usage: reboot banner <line>');
                  vm.reboot({ banners: [banner] });
                  io.out('modem rebooting\n');
                } else {
                  vm.reboot();
                  io.out('modem rebooting\n');
                }
                break;
              case 'full':
                vm.fillStorage();
                io.out('SIM storage filled\n');
                break;
              case 'list':
                io.out(
                  vm
                    .storedMessages()
                    .map(
                      (m) =>
                        `${m.memory ? `${m.memory} ` : ''}#${m.index} ${m.stat === 0 ? 'unread' : 'read'} ${m.pdu}`,
                    )
                    .join('\n') + (vm.storedMessages().length ? '\n' : 'SIM empty\n'),
                );
                break;
              case 'help':
                io.out(SIMULATE_HELP + '\n');
                break;
              case 'quit':
              case 'exit':
                rl.close();
                break;
              default:
                throw new Error(`unknown command ${JSON.stringify(cmd)} (type help)`);
            }
          } catch (err) {
            io.err(`error: ${errorMessage(err)}\n`);
          }
        });
        await done;
        offStopSignal();
        await host.close();
        if (opts.state) {
          await writeFile(`${opts.state}.tmp`, JSON.stringify(vm.snapshot()));
          await rename(`${opts.state}.tmp`, opts.state);
        }
        vm.stop();
        io.out('virtual modem stopped\n');
      },
    );
}
