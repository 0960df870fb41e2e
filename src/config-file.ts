/**
 * Reading a config file: readJson() turns an unreadable file or bad JSON into a ConfigError naming the file, without
 * quoting its text (it may hold a secret), and namingFile() names it in a parse's ConfigError; refused (EACCES), it
 * says which group may read it (whoMayRead, also used for the spool and the control socket). fileModeVerdict() judges
 * its mode: writable by others is refused (whoever can write it decides where the SMS go and what is dialled);
 * readable by others with secrets in it is a warning.
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ConfigError } from './errors.js';

/**
 * The group that owns `path` (else its directory, when this user cannot reach `path` itself) with its name from
 * /etc/group when it has one, and whether the mode lets that group in (read `path`, or pass through the directory);
 * undefined when neither can be seen.
 */
export async function owningGroup(
  path: string,
): Promise<{ gid: number; name?: string; groupMay: boolean } | undefined> {
  for (const [p, bits] of [
    [path, 0o040],
    [dirname(path), 0o010],
  ] as const) {
    const st = await stat(p).catch(() => undefined);
    if (st === undefined) continue;
    const name = await groupName(st.gid);
    return { gid: st.gid, ...(name === undefined ? {} : { name }), groupMay: (st.mode & bits) !== 0 };
  }
  return undefined;
}

/**
 * Who may read a file or directory of the bridge this user may not (EACCES), and what to do: join its group (named),
 * or sudo when no group may (or only root's: joining root is never the advice).
 */
export async function whoMayRead(path: string): Promise<string> {
  const g = await owningGroup(path);
  if (!g)
    return 'its group cannot be seen from this user (the package uses pulsa-bridge): ask an administrator, or run with sudo';
  if (!g.groupMay) return 'it is readable by its owner alone: run with sudo';
  if (g.gid === 0) return 'it is readable by root alone: run with sudo';
  const group = g.name ?? String(g.gid);
  return `it is readable by the group ${g.name ?? `gid ${g.gid}`}: join it (sudo usermod -aG ${group} $USER, then log in again) or run with sudo`;
}

/** A group's name from /etc/group (undefined when it is not there). */
async function groupName(gid: number): Promise<string | undefined> {
  const text = await readFile('/etc/group', 'utf8').catch(() => '');
  return text
    .split('\n')
    .map((l) => l.split(':'))
    .find((f) => f[2] === String(gid))?.[0];
}

export async function readJson(file: string): Promise<unknown> {
  let body: string;
  try {
    body = await readFile(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError(
      [`cannot read (${e.code ?? e.message})${e.code === 'EACCES' ? `: ${await whoMayRead(file)}` : ''}`],
      { file },
    );
  }
  try {
    return JSON.parse(body) as unknown;
  } catch (err) {
    throw new ConfigError([`not valid JSON (${jsonErrorWithoutText((err as Error).message, body)})`], { file });
  }
}

/** `parse()`, its ConfigError naming `file` (the partial loads: config-spool.ts, config-control.ts). */
export function namingFile<T>(file: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(err.problems, { file });
    throw err;
  }
}

/**
 * A JSON.parse message without the text around the error (V8 quotes it, and it may be a secret): the kind of error
 * and, when V8 gives the offset, the line and column. `Unexpected token 's', "{"pin": s3cr..." is not valid JSON`
 * becomes `Unexpected token`.
 */
export function jsonErrorWithoutText(message: string, body: string): string {
  // V8 quotes the text (`..."snippet"... is not valid JSON`) only in messages without an offset: keep the kind alone.
  const kind = /is not valid JSON\s*$/.test(message)
    ? /^Unexpected token/.test(message)
      ? 'Unexpected token'
      : 'not JSON'
    : message;
  const at = /at position (\d+)/.exec(kind);
  if (!at) return kind;
  const before = body.slice(0, Number(at[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `${kind.replace(/\s*\(?at position \d+\)?/, '').replace(/ in JSON$/, '')} at line ${line}, column ${column}`;
}

export function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}

/** The secrets a parsed config holds in clear (not `env:NAME`), by where they are. */
function secretsInClear(raw: unknown): string[] {
  const obj = (x: unknown): Record<string, unknown> | undefined =>
    typeof x === 'object' && x !== null && !Array.isArray(x) ? (x as Record<string, unknown>) : undefined;
  const clear = (x: unknown): boolean => typeof x === 'string' && x !== '' && !x.startsWith('env:');
  const r = obj(raw);
  const found: string[] = [];
  const webhook = obj(r?.webhook);
  if (clear(webhook?.hmacSecret)) found.push('webhook.hmacSecret');
  for (const [name, value] of Object.entries(obj(webhook?.headers) ?? {}))
    if (clear(value)) found.push(`webhook.headers.${name}`);
  if (clear(obj(r?.reseller)?.apiKey)) found.push('reseller.apiKey');
  if (clear(obj(r?.metrics)?.token)) found.push('metrics.token');
  const modems = Array.isArray(r?.modems) ? r.modems : [];
  modems.forEach((m, i) => clear(obj(m)?.pin) && found.push(`modems[${i}].pin`));
  return found;
}

/**
 * What the config file's mode means (see the header): `problem` refuses it, `warning` is told at start and by
 * `config check`. Without a mode to read (no file system permissions), nothing.
 */
export async function fileModeVerdict(file: string, raw: unknown): Promise<{ problem?: string; warning?: string }> {
  let mode: number;
  try {
    mode = (await stat(file)).mode & 0o777;
  } catch {
    return {}; // read a moment ago: a file gone meanwhile is the next read's error
  }
  const octal = mode.toString(8).padStart(4, '0');
  if ((mode & 0o002) !== 0) {
    return {
      problem: `the config file is writable by others (mode ${octal}): anyone on this machine could change where the SMS go and what is dialled; chmod o-w ${file} (the package installs it 0640 root:pulsa-bridge)`,
    };
  }
  const secrets = secretsInClear(raw);
  if ((mode & 0o004) !== 0 && secrets.length > 0) {
    return {
      warning: `${file} is readable by everyone (mode ${octal}) and holds ${secrets.join(', ')}: chmod o-r ${file}, or give them as env:NAME from a root-only environment file`,
    };
  }
  return {};
}
