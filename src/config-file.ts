/**
 * Reading a config file: readJson() turns an unreadable file or bad JSON into a ConfigError naming the file, without
 * quoting its text (it may hold a secret).
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from './errors.js';

export async function readJson(file: string): Promise<unknown> {
  let body: string;
  try {
    body = await readFile(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError([`cannot read (${e.code ?? e.message})`], { file });
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
  const kind = /is not valid JSON\s*$/.test(message) ? (/^Unexpected token/.test(message) ? 'Unexpected token' : 'not JSON') : message;
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
