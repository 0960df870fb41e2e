/**
 * `pulsa-bridge ports`: the serial ports with their USB ids, the stable /dev/serial/by-id path and which look like
 * known modems; with --probe, which of them answer AT (read-only commands only: AT, AT+CGMI, AT+CGMM, AT+CGSN; a port
 * another process holds is left alone) and which to put in the config.
 */
import { summaryOf } from './command-list.js';
import { Command } from 'commander';
import { silentLogger } from '../log/silent.js';
import { USB_FINGERPRINTS } from '../modem/profiles/index.js';
import { listPorts } from '../serial/ports.js';
import { atVerdict, describeModem, isProbeCandidate, recommendAtPorts, type ProbedPort } from './ports-format.js';
import { table } from './format.js';
import { printJson, type Io } from './io.js';
import { baudRates, wholeNumber } from './usage.js';

/** The commands this module adds to the program (cli.ts). */
export function commands(io: Io): Command[] {
  return [portsCommand(io)];
}

export function portsCommand(io: Io): Command {
  return new Command('ports')
    .description(summaryOf('ports'))
    .option('--json', 'print JSON')
    .option(
      '--probe',
      'find the AT port(s): send only AT, AT+CGMI, AT+CGMM, AT+CGSN to each USB serial port (ports another process holds are left alone)',
    )
    .option('--baud <rates>', 'with --probe: baud rates to try in order, comma-separated', baudRates, [115200])
    .option(
      '--timeout <ms>',
      'with --probe: per-command timeout in ms',
      wholeNumber('a timeout in ms (a whole number >= 1)', 1),
      1000,
    )
    .option('--all', 'with --probe: probe plain UARTs without USB ids too (ttyS*, ttyAMA*)')
    .action(async (opts: { json?: boolean; probe?: boolean; baud: number[]; timeout: number; all?: boolean }) => {
      const result = io.ports
        ? await io.ports.list()
        : await listPorts({
            fingerprints: USB_FINGERPRINTS.map((r) => ({
              vendorId: r.vendorId,
              ...(r.productId ? { productId: r.productId } : {}),
              profile: r.profile ?? 'generic',
              description: r.description,
            })),
          });
      if (!opts.probe) {
        if (opts.json) return printJson(io, result);
        if (result.warning) io.err(`note: ${result.warning}\n`);
        if (result.ports.length === 0) {
          io.out(
            'no serial ports found (is the modem plugged in? `dmesg | tail` shows USB events; a Huawei stick may need usb_modeswitch)\n',
          );
          return;
        }
        const rows = [['PORT', 'USB ID', 'MANUFACTURER', 'LOOKS LIKE', 'BY-ID PATH']];
        for (const p of result.ports) {
          rows.push([
            p.path,
            p.vendorId ? `${p.vendorId}:${p.productId ?? '????'}` : '-',
            p.manufacturer ?? '-',
            p.looksLike ? `${p.looksLike.description} [${p.looksLike.profile}]` : '-',
            p.byIdPath ?? '-',
          ]);
        }
        io.out(table(rows));
        return;
      }

      // --probe: read-only AT on the USB-like ports, in parallel (a few at a time), each bounded by its timeouts.
      const candidates = result.ports.filter((p) => isProbeCandidate(p, opts.all === true));
      const { probePorts } = await import('../modem/probe.js'); // the modem stack, only for --probe
      const probes = await probePorts(
        candidates.map((p) => p.path),
        { baudRates: opts.baud, timeoutMs: opts.timeout, logger: silentLogger() },
      );
      const probed: ProbedPort[] = result.ports.map((port) => {
        const i = candidates.indexOf(port);
        return i >= 0 ? { port, probe: probes[i]! } : { port };
      });
      const recommended = recommendAtPorts(probed);
      if (opts.json)
        return printJson(io, {
          ...result,
          ports: probed.map((r) => (r.probe ? { ...r.port, probe: r.probe } : r.port)),
          recommended,
        });
      if (result.warning) io.err(`note: ${result.warning}\n`);
      if (result.ports.length === 0) {
        io.out(
          'no serial ports found (is the modem plugged in? `dmesg | tail` shows USB events; a Huawei stick may need usb_modeswitch)\n',
        );
        return;
      }
      const rows = [['PORT', 'USB ID', 'LOOKS LIKE', 'AT', 'MODEM', 'BY-ID PATH']];
      for (const { port: p, probe } of probed) {
        rows.push([
          p.path,
          p.vendorId ? `${p.vendorId}:${p.productId ?? '????'}` : '-',
          p.looksLike ? `${p.looksLike.description} [${p.looksLike.profile}]` : '-',
          probe ? atVerdict(probe) : '-',
          probe?.answers ? describeModem(probe) || '-' : '-',
          p.byIdPath ?? '-',
        ]);
      }
      io.out(table(rows));
      for (const { probe } of probed) {
        const verdict = probe && atVerdict(probe);
        if (!probe?.error || (verdict !== 'busy' && verdict !== 'error')) continue;
        io.out(`${probe.error.message}\n${probe.error.hint ? `  hint: ${probe.error.hint}\n` : ''}`);
      }
      const skipped = probed.filter((r) => !r.probe).map((r) => r.port.path);
      if (skipped.length > 0) io.out(`not probed (no USB ids; --all probes them): ${skipped.join(', ')}\n`);
      if (recommended.length === 0) {
        io.out(
          candidates.length === 0
            ? 'no USB serial port to probe\n'
            : `no port answered AT (tried ${opts.baud.join(', ')} baud; busy ports were left alone)\n`,
        );
        return;
      }
      const named = recommended.map((r) => {
        const also = r.alternatives.length > 0 ? `; also answer AT: ${r.alternatives.join(', ')}` : '';
        return `${r.path}${r.modem ? ` (${r.modem}${also})` : also ? ` (${also.slice(2)})` : ''}`;
      });
      const unstable = recommended.some((r) => !r.stable)
        ? ' [no /dev/serial/by-id link for some: ttyUSB numbers can change after a USB reset]'
        : '';
      io.out(`use as "port" in the config (one per modem): ${named.join(', ')}${unstable}\n`);
    });
}
