/**
 * What `pulsa-bridge ports --probe` shows, from the probe's results: which ports are worth probing, the AT verdict
 * per port, the modem in words, and the port(s) to put in the config. PURE (no I/O): the probe itself is
 * src/modem/probe.ts, the port listing src/serial/ports.ts.
 */
import type { ProbeResult } from '../modem/probe.js';
import type { PortInfo } from '../serial/ports.js';

/** The AT column of `ports --probe`: answers / silent or garbage / held by someone else / could not be probed. */
export type AtVerdict = 'yes' | 'no' | 'busy' | 'error';

export function atVerdict(result: ProbeResult): AtVerdict {
  if (result.answers) return 'yes';
  const code = result.error?.code;
  if (code === 'PORT_BUSY') return 'busy';
  if (code === undefined || code === 'MODEM_SILENT') return 'no';
  return 'error';
}

/**
 * Ports worth probing: USB serial (ttyUSB*, ttyACM*) and anything with a USB vendor id. Plain UARTs without USB ids
 * (ttyS*, ttyAMA*) only with `all`: most are empty placeholders, and a board's UART may belong to something else.
 */
export function isProbeCandidate(port: Pick<PortInfo, 'path' | 'vendorId'>, all = false): boolean {
  return all || port.vendorId !== undefined || /\/tty(USB|ACM)\d+$/.test(port.path);
}

export interface ProbedPort {
  port: PortInfo;
  /** Absent when the port was not probed. */
  probe?: ProbeResult;
}

export interface AtPortRecommendation {
  /** The path to put in the config: the /dev/serial/by-id link when there is one. */
  path: string;
  /** false when there is no by-id link (ttyUSB numbers can change after a USB reset). */
  stable: boolean;
  /** `manufacturer model [profile]`, or '' when the modem did not say. */
  modem: string;
  /** Other ports of the same USB device that answer AT too. */
  alternatives: string[];
}

export function describeModem(probe: ProbeResult): string {
  const name = [probe.manufacturer, probe.model].filter((s) => s !== undefined && s !== '').join(' ');
  if (!probe.profile) return name;
  return name === '' ? `[${probe.profile}]` : `${name} [${probe.profile}]`;
}

/** One USB device = same by-id link without its interface suffix, else same vendor/product/serial, else the port. */
function deviceKey(port: PortInfo): string {
  if (port.byIdPath) return port.byIdPath.replace(/-if\d+(-port\d+)?$/, '');
  if (port.vendorId && port.serialNumber) return `${port.vendorId}:${port.productId ?? ''}:${port.serialNumber}`;
  return port.path;
}

/** The AT port(s) to configure: one per USB device (the first that answers, by path), its other AT ports as alternatives. */
export function recommendAtPorts(rows: readonly ProbedPort[]): AtPortRecommendation[] {
  const byDevice = new Map<string, ProbedPort[]>();
  for (const row of rows) {
    if (!row.probe?.answers) continue;
    const key = deviceKey(row.port);
    byDevice.set(key, [...(byDevice.get(key) ?? []), row]);
  }
  return [...byDevice.values()].map((group) => {
    const [first, ...rest] = group as [ProbedPort, ...ProbedPort[]];
    return {
      path: first.port.byIdPath ?? first.port.path,
      stable: first.port.byIdPath !== undefined,
      modem: describeModem(first.probe!),
      alternatives: rest.map((r) => r.port.byIdPath ?? r.port.path),
    };
  });
}
