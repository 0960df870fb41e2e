/**
 * Lists serial ports with their USB identity: what udev says of the candidate ttys (udev-ports.ts; the ports
 * serialport's list() gives, without exporting the whole udev database), or sysfs read directly when udevadm is
 * missing or fails (sysfs-ports.ts, with a warning saying why). Adds the stable /dev/serial/by-id path and, from a
 * fingerprints table passed in (the modem profiles own it), which ports look like known modems.
 */
import { readdir, readlink, realpath } from 'node:fs/promises';
import { join, resolve as resolvePath } from 'node:path';
import { matchFingerprint } from './fingerprint.js';
import type { PortInfo } from './port-info.js';
import { listFromSysfs } from './sysfs-ports.js';
import { listFromUdev } from './udev-ports.js';

export type { PortInfo };

export interface FingerprintRow {
  vendorId: string;
  productId?: string;
  profile: string;
  description: string;
}

export interface ListPortsOptions {
  fingerprints: readonly FingerprintRow[];
  /** Roots, overridable for tests. */
  sysClassTty?: string;
  serialById?: string;
  /** Skip udev (tests of the sysfs path). */
  sysfsOnly?: boolean;
  /** The udevadm to run (tests; default `udevadm` on PATH). */
  udevadm?: string;
}

/**
 * Map of device path -> /dev/serial/by-id symlink. A link whose target cannot be resolved on disk (device node not
 * there, e.g. a container with /dev/serial bind-mounted) is mapped by its literal target.
 */
async function byIdMap(dir: string): Promise<Map<string, string>> {
  const map = new Map<string, string>();
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return map; // no USB serial devices at all, or no udev
  }
  for (const name of names) {
    const link = join(dir, name);
    try {
      map.set(await realpath(link), link);
      continue;
    } catch {
      // the target is not there: fall back to its literal path below
    }
    try {
      map.set(resolvePath(dir, await readlink(link)), link);
    } catch {
      // not a symlink at all (or vanished meanwhile): nothing to map
    }
  }
  return map;
}

export { matchFingerprint };

export async function listPorts(
  options: ListPortsOptions,
): Promise<{ ports: PortInfo[]; source: 'udev' | 'sysfs'; warning?: string }> {
  let ports: PortInfo[] | undefined;
  let source: 'udev' | 'sysfs' = 'udev';
  let warning: string | undefined;
  if (!options.sysfsOnly) {
    try {
      ports = await listFromUdev({
        sysClassTty: options.sysClassTty ?? '/sys/class/tty',
        ...(options.udevadm ? { udevadm: options.udevadm } : {}),
      });
    } catch (err) {
      warning = `udev listing failed (${err instanceof Error ? err.message : String(err)}); read sysfs instead`;
    }
  }
  if (!ports) {
    source = 'sysfs';
    ports = await listFromSysfs(options.sysClassTty ?? '/sys/class/tty');
  }
  const byId = await byIdMap(options.serialById ?? '/dev/serial/by-id');
  for (const p of ports) {
    const real = await realpath(p.path).catch(() => p.path);
    const link = byId.get(real);
    if (link) p.byIdPath = link;
    const fp = matchFingerprint(p, options.fingerprints);
    if (fp) p.looksLike = { profile: fp.profile, description: fp.description };
  }
  ports.sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
  const result: { ports: PortInfo[]; source: 'udev' | 'sysfs'; warning?: string } = { ports, source };
  if (warning) result.warning = warning;
  return result;
}
