/**
 * The control section of the config (its schema, part of config.ts's configSchema), the modems list's own rules (name,
 * at least one, names and ports once: both loads use them), where a CLI looks for the running daemon's socket, and the
 * daemon-only load: `control`, `spool` and the modems' names and ports, checked with the same schemas, the modems'
 * other keys not read, no other section read and no secret resolved. The commands that ask the daemon (info, at, sms,
 * ussd, balance, canary) load this; the whole config only when they open a port themselves. So an operator whose shell
 * lacks the service's environment (`env:PB_PIN`) still reaches the daemon, which validated its own config at start.
 */
import * as v from 'valibot';
import {
  anyObject,
  asRecord,
  int,
  matching,
  object,
  optional,
  problemsOf,
  refineShape,
  text,
  withDefault,
  type Env,
  type Schema,
} from './config-fields.js';
import { deepFreeze, fileModeVerdict, namingFile, readJson } from './config-file.js';
import { spoolSchema, type SpoolSection } from './config-spool.js';
import { ConfigError } from './errors.js';

/** A group by name or gid (control.group, control.operateGroup). */
function groupSchema() {
  return v.union(
    [int(0, 2_147_483_647), v.pipe(text(), matching(/^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/, 'a group name or gid', true))],
    'expected a group name or gid',
  );
}

/** The control socket operators' commands reach the running daemon through (src/control/server/server.ts). */
export function controlSchema() {
  return withDefault(
    object({
      /** Default: $RUNTIME_DIRECTORY/control.sock when systemd sets RUNTIME_DIRECTORY, else <spool.dir>/control.sock. */
      socket: optional(text()),
      /** Group that owns the socket (mode 0660), a name or a gid; default the daemon's own group (the unit's Group=). */
      group: optional(groupSchema()),
      /**
       * Group whose members may operate (AT, USSD, SMS send/delete, balance with a code or replies), a name or a gid;
       * the socket's group (`group`) may read only. Root and the daemon's own user always may. A group that does not
       * exist leaves operating to those two (logged at start). See src/control/server/access.ts.
       */
      operateGroup: withDefault(groupSchema(), 'pulsa-bridge-ops'),
    }),
    () => ({}),
  );
}

export type ControlSection = v.InferOutput<ReturnType<typeof controlSchema>>;

/** Where systemd's RuntimeDirectory=pulsa-bridge puts the socket (the CLI, started outside the unit, looks there). */
const SYSTEMD_RUNTIME_DIR = '/run/pulsa-bridge';
const CONTROL_SOCKET_NAME = 'control.sock';

/** The socket's path in a directory. */
const socketIn = (dir: string): string => `${dir.replace(/\/+$/, '')}/${CONTROL_SOCKET_NAME}`;

/** The daemon's socket path: `control.socket`, else `$RUNTIME_DIRECTORY` (its first entry) when systemd set it, else beside the spool. */
export function controlSocketPath(control: ControlSection, spoolDir: string, env: Env): string {
  if (control.socket !== undefined) return control.socket;
  return socketIn(env.RUNTIME_DIRECTORY?.split(':')[0] || spoolDir);
}

/** What finding the daemon takes of a config (the whole Config has it too). */
export interface DaemonAddress {
  control: ControlSection & { socketPath: string };
  spool: { dir: string };
}

/**
 * Where a CLI looks for the running daemon's socket, in order: the configured one only, when the config names it;
 * else the path this process would derive, the systemd unit's runtime directory, and the spool directory (a CLI run
 * from a login shell has no RUNTIME_DIRECTORY, the daemon under systemd has).
 */
export function controlSocketCandidates(cfg: DaemonAddress): string[] {
  if (cfg.control.socket) return [cfg.control.socket];
  return [...new Set([cfg.control.socketPath, socketIn(SYSTEMD_RUNTIME_DIR), socketIn(cfg.spool.dir)])];
}

/** A modem's name (both loads). */
export function modemName() {
  return v.pipe(text(), matching(/^[A-Za-z0-9_-]{1,40}$/, 'letters, digits, - or _ (at most 40)', true));
}

/** The `modems` array (both loads): at least one, each name and each port used once. */
export function modemList<T extends Schema>(modem: T) {
  return refineShape(
    v.pipe(
      v.array(modem, 'required: a non-empty array of modems'),
      v.minLength(1, 'required: a non-empty array of modems'),
    ),
    Array.isArray,
    (modems: unknown[], addIssue) => {
      const names = new Set<unknown>();
      const ports = new Set<unknown>();
      modems.forEach((raw, i) => {
        const m = asRecord(raw);
        if (!m) return;
        if (typeof m.name === 'string' && names.has(m.name))
          addIssue({ path: [i, 'name'], message: `duplicate name ${JSON.stringify(m.name)}` });
        if (typeof m.port === 'string' && ports.has(m.port))
          addIssue({ path: [i, 'port'], message: `port ${m.port} is used by another modem` });
        names.add(m.name);
        ports.add(m.port);
      });
    },
  );
}

/** The daemon-only view of a config: how to reach the daemon and which modems the file names. */
export interface DaemonConfig extends DaemonAddress {
  spool: SpoolSection;
  modems: ReadonlyArray<{ name: string; port: string }>;
}

/** The control and spool sections and the modems' names and ports of a parsed config. Throws ConfigError. */
export function parseDaemonSection(raw: unknown, env: Env = process.env): DaemonConfig {
  // A key missing reads `required`, as in the full config; the modem's other keys are not read here.
  const modem = v.pipe(
    v.custom<Record<string, unknown>>(anyObject, 'expected an object'),
    v.looseObject({ name: modemName(), port: text() }, 'required'),
  );
  const schema = v.pipe(
    v.custom<Record<string, unknown>>(anyObject, 'expected an object'),
    // control and spool have defaults: only `modems` can be missing
    v.looseObject(
      { control: controlSchema(), spool: spoolSchema(), modems: modemList(modem) },
      'required: a non-empty array of modems',
    ),
  );
  const r = v.safeParse(schema, raw);
  if (!r.success) throw new ConfigError(problemsOf(r.issues));
  const { control, spool, modems } = r.output;
  return deepFreeze({
    control: { ...control, socketPath: controlSocketPath(control, spool.dir, env) },
    spool,
    modems: modems.map((m) => ({ name: m.name, port: m.port })),
  });
}

/**
 * Daemon-only mode: reads the config file and checks what finding the daemon takes. A file writable by others is
 * refused as by the whole load (it would choose the socket operators' commands go to). Throws ConfigError (naming the file).
 */
export async function loadDaemonConfig(file: string, env: Env = process.env): Promise<DaemonConfig> {
  const raw = await readJson(file);
  const mode = await fileModeVerdict(file, raw);
  return namingFile(file, () => {
    if (mode.problem) throw new ConfigError([mode.problem]);
    return parseDaemonSection(raw, env);
  });
}
