/**
 * Text that came from a modem, a network or an SMS sender, made safe for an operator's terminal. PURE.
 *
 * Anyone can send the centre SIM an SMS, and a modem or a USSD reply can carry any bytes: an ESC sequence in one could
 * retitle the terminal (OSC), clear the screen or move the cursor (CSI), a CR could overwrite what was printed on the
 * line, and a bidi override could make a number read backwards. Every such character is shown as a visible escape:
 * C0 controls and DEL as `\xHH` (`\r`, `\t` by name), C1 controls (U+0080-U+009F, U+009B is a one-byte CSI) as
 * `\u{HH}`, bidi controls (U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, U+061C) and line/paragraph separators
 * (U+2028/U+2029) as `\u{HHHH}`. A newline is kept where the caller says the text is multi-line (an SMS body), and
 * escaped (`\n`) elsewhere. Printable text, including non-Latin scripts and emoji, is left as it is.
 *
 * safeJson() is the same for JSON output: the value unchanged, the characters JSON.stringify leaves raw (DEL, C1, bidi,
 * U+2028/U+2029) written as \uXXXX escapes, so the JSON parses to the same value.
 */

const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_KEEP_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const JSON_RAW = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\r': '\\r', '\n': '\\n', '\t': '\\t' };

function escapeOne(c: string): string {
  const named = NAMED[c];
  if (named) return named;
  const code = c.charCodeAt(0);
  if (code < 0x80) return `\\x${code.toString(16).padStart(2, '0')}`;
  return `\\u{${code.toString(16).padStart(code < 0x100 ? 2 : 4, '0')}}`;
}

/** The text with control characters visible (see the header); `multiline` keeps newlines. Non-strings via String(). */
export function safeText(value: unknown, o: { multiline?: boolean } = {}): string {
  const text = typeof value === 'string' ? value : String(value);
  return text.replace(o.multiline ? UNSAFE_KEEP_NEWLINE : UNSAFE, escapeOne);
}

/** JSON.stringify with the characters it leaves raw escaped as \uXXXX (the JSON still parses to the same value). */
export function safeJson(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? 'undefined').replace(JSON_RAW, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
