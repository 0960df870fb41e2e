/**
 * PIN tries left, read where the modem tells them. PURE: answer lines in, a count out.
 * Understands the 27.007 answer and the vendor ones a profile may ask for (profiles list the commands):
 *   +CPINR: SIM PIN,<retries>[,<default>]          (27.007 AT+CPINR)
 *   +SPIC: <pin1>,<puk1>,<pin2>,<puk2>              (AT+SPIC)
 *   ^CPIN: <code>,[<times>],<puk>,<pin>,<puk2>,<pin2> (AT^CPIN?)
 *   +QPINC: "SC",<pin>,<puk>                         (AT+QPINC="SC")
 * Invariant: undefined whenever the answer does not clearly give the PIN1 count (the caller then relies on the
 * memory of rejected PINs alone); never a guess.
 */

function fields(line: string): string[] {
  const i = line.indexOf(':');
  return line
    .slice(i + 1)
    .split(',')
    .map((f) => f.trim().replace(/^"|"$/g, ''));
}

function count(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,2}$/.test(text)) return undefined;
  return Number(text);
}

/** PIN1 tries left from any of the answers above, undefined when none of the lines gives it. */
export function parsePinTries(lines: readonly string[]): number | undefined {
  for (const raw of lines) {
    const line = raw.trim();
    if (/^\+CPINR:/i.test(line)) {
      const f = fields(line);
      if (/^SIM PIN$/i.test(f[0] ?? '')) return count(f[1]);
    } else if (/^\+SPIC:/i.test(line)) {
      return count(fields(line)[0]);
    } else if (/^\^CPIN:/i.test(line)) {
      return count(fields(line)[3]);
    } else if (/^\+QPINC:/i.test(line)) {
      const f = fields(line);
      if (/^SC$/i.test(f[0] ?? '')) return count(f[1]);
    }
  }
  return undefined;
}
