/**
 * Secrets out of what is shown or logged (PURE). redactAtLine: the arguments of every PIN/PUK/password segment of an
 * AT line (+CPIN, +CPIN2, +CPWD, +CLCK, +CSIM, the ** dial codes) become `[redacted]`; a USSD answer longer than a
 * menu choice is masked (maskUssdAnswer). maskUrl: user info, query
 * values and fragment masked, the endpoint still recognisable (unparseable text masked by pattern).
 * maskSecretEchoes: a secret (API key) out of text someone else wrote, in any case or encoding, and any run of
 * MIN_ECHO or more of its characters.
 */

export const REDACTED = '[redacted]';
const MASK = '********';

/** Arguments: quoted strings (which may hold `;`) or anything up to the next `;`. */
const ARGS = String.raw`(?:"[^"]*"?|[^;"])*`;
const SECRET_SET = new RegExp(String.raw`([+^](?:CPIN2?|CPWD|CLCK|CSIM)\s*=)${ARGS}`, 'gi');
const SECRET_DIAL = /(\*[TPW,!@IG]*\*[TPW,!@IG]*0[TPW,!@IG]*(?:4|42|5|52)[TPW,!@IG]*\*)[^;]*/gi; // dial modifiers may sit inside

const redactOnce = (line: string): string =>
  line.replace(SECRET_SET, `$1${REDACTED}`).replace(SECRET_DIAL, `$1${REDACTED}`);

/** The line without the spaces a modem ignores (V.250: spaces outside quoted strings are not part of a command). */
const asTheModemReadsIt = (line: string): string =>
  line.replace(/("[^"]*"?)|[ \t]+/g, (m, quoted: string | undefined) => quoted ?? '');

/**
 * The AT line as it may appear in logs, messages, labels and status (see the header). Judged as the modem reads it:
 * when spaces hide a secret segment (`AT + CPIN = 4321`, `ATD * * 04*...`), the line is shown without them.
 */
export function redactAtLine(line: string): string {
  const shown = maskUssdInAtLine(redactOnce(line));
  const compact = asTheModemReadsIt(shown);
  const again = redactOnce(compact);
  return again === compact ? shown : again;
}

/**
 * A USSD answer as it may be logged: a one- or two-character menu choice as it is, anything longer (a PIN, a token,
 * an account number someone typed into a menu) masked with its length.
 */
export function maskUssdAnswer(text: string): string {
  return [...text].length <= 2 ? text : `[${[...text].length} characters]`;
}

/** An AT line's USSD answer (`AT+CUSD=1,"654321",15`) masked as maskUssdAnswer does; a dialled code (`*...#`) stays. */
export function maskUssdInAtLine(line: string): string {
  return line.replace(/(\+CUSD\s*=\s*1\s*,\s*")([^"]*)(")/gi, (m, a: string, text: string, b: string) =>
    /^[*#]/.test(text) ? m : `${a}${maskUssdAnswer(text)}${b}`,
  );
}

/** A URL as it may be shown (see the header). */
export function maskUrl(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return value.replace(/\/\/[^/@\s]*@/g, `//${MASK}@`).replace(/([?&][^=&#\s]*=)[^&#\s]*/g, `$1${MASK}`);
  }
  if (!u.username && !u.password && !u.search && !u.hash) return value;
  if (u.username) u.username = MASK;
  if (u.password) u.password = MASK;
  if (u.search) {
    const parts = u.search
      .slice(1)
      .split('&')
      .map((p) => (p.includes('=') ? `${p.slice(0, p.indexOf('='))}=${MASK}` : p));
    u.search = `?${parts.join('&')}`;
  }
  if (u.hash) u.hash = MASK;
  const href = u.href.replaceAll('%2A', '*');
  return href.endsWith('/') && !value.trim().endsWith('/') ? href.slice(0, -1) : href;
}

/** Shortest run of a secret's characters that counts as an echo of it. */
export const MIN_ECHO = 6;

/** `text` with every echo of `secret` replaced by `***` (see the header). Secrets shorter than 4 are left alone. */
export function maskSecretEchoes(text: string, secret: string): string {
  if (secret.length < 4) return text;
  let out = text;
  const forms = new Set([
    secret,
    encodeURIComponent(secret),
    Buffer.from(secret).toString('base64').replace(/=+$/, ''),
  ]);
  for (const f of forms) out = replaceAllCaseless(out, f);
  if (secret.length < MIN_ECHO) return out;
  const key = secret.toLowerCase();
  const pieces = new Set<string>();
  for (let i = 0; i + MIN_ECHO <= key.length; i++) pieces.add(key.slice(i, i + MIN_ECHO));
  const lower = out.toLowerCase();
  let result = '';
  let i = 0;
  while (i < out.length) {
    if (i + MIN_ECHO <= out.length && pieces.has(lower.slice(i, i + MIN_ECHO))) {
      let end = i + MIN_ECHO;
      while (end < out.length && key.includes(lower.slice(i, end + 1))) end++;
      result += '***';
      i = end;
    } else {
      result += out[i];
      i++;
    }
  }
  return result;
}

function replaceAllCaseless(text: string, needle: string): string {
  if (needle.length === 0) return text;
  const lower = text.toLowerCase();
  const n = needle.toLowerCase();
  let out = '';
  let from = 0;
  for (let at = lower.indexOf(n); at >= 0; at = lower.indexOf(n, from)) {
    out += text.slice(from, at) + '***';
    from = at + n.length;
  }
  return out + text.slice(from);
}
