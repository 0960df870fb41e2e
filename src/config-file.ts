/**
 * Reading a config file: readJson() turns an unreadable file or bad JSON into a ConfigError naming the file, without
 * quoting its text (it may hold a secret). fileModeVerdict() judges its mode: writable by others is refused (whoever
 * can write it decides where the SMS go and what is dialled); readable by others with secrets in it is a warning.
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ConfigError } from './errors.js';

/** Which group may read a config this user cannot (the file's, else its directory's), and how to join it. */
async function whoMayRead(file: string): Promise<string> {
  let gid: number | undefined;
  for (const p of [file, dirname(file)]) {
    gid = await stat(p).then(
      (s) => s.gid,
      () => undefined,
    );
    if (gid !== undefined) break;
  }
  const name = gid === undefined ? undefined : await groupName(gid);
  const group = name ?? (gid === undefined ? 'pulsa-bridge' : `gid ${gid}`);
  return `it is readable by the group ${group}: join it (sudo adduser $USER ${name ?? 'pulsa-bridge'}, then log in again) or run with sudo`;
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
