/**
 * `pulsa-bridge simulate --link PATH`: serves the virtual modem on a pseudo-terminal, so the real daemon (native
 * serial binding, a real config with `"port": PATH`) can be run, shown and trained on without hardware. Reads
 * commands from standard input to inject SMS and faults; ends on `quit`, end of input, Ctrl-C or SIGTERM.
 */
import { Command, Option } from 'commander';
import { createInterface } from 'node:readline';
import { errorMessage } from '../errors.js';
import { hostVirtualModemOnPty, type PtyHost } from '../sim/pty-host.js';
import { VirtualModem } from '../sim/virtual-modem.js';
import type { Io } from './io.js';
import { onStopSignal } from './lifecycle.js';
import { wholeNumber } from './usage.js';

const SIMULATE_HELP = `commands (one per line):
  sms <sender> <text...>    an SMS arrives (e.g. sms 858 Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6281...)
  garbage                   noise bytes on the line
  stall <ms>                the modem stops answering for <ms> ms
  reboot                    the modem restarts (banners; CNMI lost)
  full                      fill the SIM storage
  list                      SMS stored on the SIM
  help, quit`;

export function simulateCommand(io: Io): Command {
  return new Command('simulate')
    .description('serve the virtual modem on a pseudo-terminal (needs socat): point a config\'s modems[].port at --link and run the real daemon without hardware; type `help` for the commands that inject SMS and faults')
    .requiredOption('-l, --link <path>', 'path to create for the bridge to open, e.g. /tmp/pulsa-modem')
    .addOption(new Option('--profile <id>', 'behave like this modem family').choices(['generic', 'simcom', 'huawei']).default('simcom'))
    .option('--pin <pin>', 'the SIM starts locked with this PIN')
    .option('--baud <rate>', 'pace the line like a UART at this baud rate (default: memory speed)', wholeNumber('a baud rate such as 115200 or 9600', 1))
    .action(async (opts: { link: string; profile: 'generic' | 'simcom' | 'huawei'; pin?: string; baud?: number }) => {
      const vm = new VirtualModem({ path: `/virtual/pty:${opts.link}`, profile: opts.profile, ...(opts.pin ? { pin: opts.pin } : {}) });
      const host: PtyHost = await hostVirtualModemOnPty(vm, { linkPath: opts.link, ...(opts.baud ? { paceBaud: opts.baud } : {}) });
      io.out(`virtual ${opts.profile} modem on ${opts.link}; type \`help\` for commands\n`);
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
              io.out(`sms from ${from}: ${r.pdus.length} part(s)${r.indexes.length ? `, stored at ${r.indexes.join(', ')}` : ''}${r.held ? `, ${r.held} held by the network` : ''}\n`);
              break;
            }
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
              vm.reboot();
              io.out('modem rebooting\n');
              break;
            case 'full':
              vm.fillStorage();
              io.out('SIM storage filled\n');
              break;
            case 'list':
              io.out(vm.storedMessages().map((m) => `#${m.index} ${m.stat === 0 ? 'unread' : 'read'} ${m.pdu}`).join('\n') + (vm.storedMessages().length ? '\n' : 'SIM empty\n'));
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
      vm.stop();
      io.out('virtual modem stopped\n');
    });
}
