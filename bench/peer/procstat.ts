/**
 * CPU time and peak memory of another process, from Linux's /proc (no other platform: the peers run here only).
 *
 * - CPU: /proc/<pid>/stat fields 14-17 (utime, stime, cutime, cstime) in clock ticks, converted with `getconf CLK_TCK`
 *   (100 when getconf fails). cutime/cstime count the children the process has already waited for: for gammu-smsd
 *   that is its RunOnReceive shells with jq and curl, which do its forwarding.
 * - Memory: VmHWM (peak resident set) from /proc/<pid>/status, in KiB.
 * Readers return undefined when the process is gone (the caller reports what it could not measure). The parsers are
 * pure and exported for that reason.
 */
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';

export interface CpuTimes {
  /** Seconds the process itself ran (user + system). */
  self: number;
  /** self + waited-for children (user + system). */
  withChildren: number;
}

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 5000 });
    const n = Number(r.stdout?.trim());
    ticksPerSecond = Number.isInteger(n) && n > 0 ? n : 100;
  }
  return ticksPerSecond;
}

/** Parses /proc/<pid>/stat. The command name (field 2) may contain spaces and parentheses: fields follow the last ')'. */
export function parseProcStat(text: string, ticks: number): CpuTimes | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  // fields[0] is field 3 (state): utime is field 14 -> index 11.
  const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i]));
  if (![utime, stime, cutime, cstime].every((v) => Number.isFinite(v))) return undefined;
  const self = (utime! + stime!) / ticks;
  return { self, withChildren: self + (cutime! + cstime!) / ticks };
}

/** A `<field>:  <n> kB` line of /proc/<pid>/status (VmHWM, VmRSS, ...), in KiB. */
export function statusFieldKiB(text: string, field: string): number | undefined {
  const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

/** VmHWM in KiB from /proc/<pid>/status. */
export function parseVmHwmKiB(text: string): number | undefined {
  return statusFieldKiB(text, 'VmHWM');
}

export async function readCpuTimes(pid: number): Promise<CpuTimes | undefined> {
  try {
    return parseProcStat(await readFile(`/proc/${pid}/stat`, 'utf8'), clockTicks());
  } catch {
    return undefined; // the process is gone: the caller reports the figure as not measured
  }
}

export async function readPeakRssKiB(pid: number): Promise<number | undefined> {
  try {
    return parseVmHwmKiB(await readFile(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return undefined; // as above
  }
}
