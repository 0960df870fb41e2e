/**
 * What every CLI command writes to and reads from: one Io (stdout, stderr, stdin), so tests run commands in-process
 * with captured output; plus the two hooks tests use to put a scripted device behind --simulate and `ports`.
 * Also the one default config path and the one JSON printer (two-space indent, newline), so `--json` looks the same
 * everywhere.
 */
import type { listPorts } from '../serial/ports.js';
import { safeJson } from '../terminal-text.js';

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Input for the interactive AT terminal and `simulate` (default: process.stdin). */
  input?: NodeJS.ReadableStream;
  /** Tests: the listing behind `ports` (default: listPorts; a listed `virtual:` path opens a virtual modem). */
  ports?: { list: () => ReturnType<typeof listPorts> };
}

export const defaultIo: Io = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
};

/** Where `run`, `config check`, `queue` and `status` look for the config unless told (`$PULSA_BRIDGE_CONFIG` wins). */
const DEFAULT_CONFIG_PATH = '/etc/pulsa-bridge/config.json';

/** The config file to use: the one given, else `$PULSA_BRIDGE_CONFIG`, else DEFAULT_CONFIG_PATH. */
export function configPath(given?: string, env: Record<string, string | undefined> = process.env): string {
  return given ?? env.PULSA_BRIDGE_CONFIG ?? DEFAULT_CONFIG_PATH;
}

export function printJson(io: Io, value: unknown): void {
  io.out(safeJson(value, 2) + '\n'); // characters a terminal would act on are \u escapes
}
