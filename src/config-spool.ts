/**
 * The spool section of the config: its schema (part of config.ts's configSchema) and the spool-only load that
 * `status` and `queue ...` use. The spool-only load applies the same schema to `spool` and `stateDir` alone: no
 * secrets are resolved and no other section is read, so those commands work for an operator whose shell lacks the
 * service's environment (`env:PB_PIN`); `run` and `config check` validate the whole file.
 */
import * as v from 'valibot';
import { anyObject, bool, int, object, optional, orDefault, problemsOf, text, withDefault } from './config-fields.js';
import { deepFreeze, namingFile, readJson } from './config-file.js';
import { ConfigError } from './errors.js';

/** The spool section's defaults. */
export const SPOOL_DEFAULTS = {
  dir: '/var/lib/pulsa-bridge/spool',
  sentRetentionDays: 30,
  ignoredRetentionDays: 30,
  fsync: true,
} as const;
/** The range of both retention settings, in days. */
export const RETENTION_DAYS = { min: 0, max: 3650 } as const;

export function spoolSchema() {
  const days = (fallback: number) => withDefault(int(RETENTION_DAYS.min, RETENTION_DAYS.max), fallback);
  return withDefault(
    object({
      dir: orDefault(text(), SPOOL_DEFAULTS.dir as string),
      sentRetentionDays: days(SPOOL_DEFAULTS.sentRetentionDays),
      ignoredRetentionDays: days(SPOOL_DEFAULTS.ignoredRetentionDays),
      fsync: withDefault(bool(), SPOOL_DEFAULTS.fsync as boolean),
    }),
    () => ({}),
  );
}

export type SpoolSection = v.InferOutput<ReturnType<typeof spoolSchema>>;

/** What the operator commands that need only the spool (`status`, `queue ...`) take from the config. */
export interface SpoolOnlyConfig {
  spool: SpoolSection;
  /** Where the spool's integrity key is (absent: the spool directory). */
  stateDir?: string;
}

/** The spool section and stateDir of a parsed config (the other keys are not looked at). Throws ConfigError. */
export function parseSpoolSection(raw: unknown): SpoolOnlyConfig {
  const schema = v.pipe(
    v.custom<Record<string, unknown>>(anyObject, 'expected an object'),
    v.looseObject({ spool: spoolSchema(), stateDir: optional(text()) }),
  );
  const r = v.safeParse(schema, raw);
  if (!r.success) throw new ConfigError(problemsOf(r.issues));
  return deepFreeze({
    spool: r.output.spool,
    ...(r.output.stateDir !== undefined ? { stateDir: r.output.stateDir } : {}),
  });
}

/** Spool-only mode: reads the config file and checks its `spool` section and stateDir alone. Throws ConfigError (naming the file). */
export async function loadSpoolConfig(file: string): Promise<SpoolOnlyConfig> {
  const raw = await readJson(file);
  return namingFile(file, () => parseSpoolSection(raw));
}
