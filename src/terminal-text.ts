/**
 * Text from a modem, a network or an SMS sender made safe for an operator's terminal (PURE): C0/C1 controls, DEL, bidi
 * controls and line separators are shown as visible escapes, so an SMS cannot retitle the terminal, move the cursor or
 * make a number read backwards. A newline is kept only where the caller says the text is multi-line; printable text
 * (any script, emoji) is left as it is. safeJson() does the same for JSON output and parses back to the same value.
 */

const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_KEEP_NEWLINE =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
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
  return (JSON.stringify(value, null, indent) ?? 'undefined').replace(
    JSON_RAW,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
