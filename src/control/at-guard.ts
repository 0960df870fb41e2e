/**
 * Which raw AT commands an operator may send through the running daemon without `--force`. PURE.
 *
 * The daemon relies on state it set at init: echo off, verbose result codes, PDU mode, the message storage, new-
 * message indications (CNMI), the SMS service (CSMS), the error format (CMEE), the character set (CSCS, for USSD),
 * Huawei's URC settings, the baud rate; and on the rule that an SMS leaves the SIM (CMGD) or is acknowledged (CNMA)
 * only after its record is durable. A command line that would change any of these, or reset or power off the modem,
 * is refused unless forced; after a forced one the daemon re-checks its settings and re-initialises what changed.
 *
 * The line is split the way a modem parses it (V.250): after `AT`, basic commands run together (`ATE0V1`, `AT&F`),
 * extended ones (`+CSQ`, `^CURC`, `$QCSIMSTAT`) are separated by `;`, and `D` (dial) takes the rest of the line.
 * Queries (`AT+CNMI?`) and tests (`AT+CNMI=?`) never change anything and are always allowed.
 */

export interface AtGuardVerdict {
  /** Each command of the line, as parsed (`+CSQ`, `E1`, `D*888#;`). */
  commands: string[];
  /** Why the line is refused without --force (empty: allowed). */
  refused: string[];
  /** The daemon must re-check its settings after this line runs (forced lines, and e.g. AT+CPIN=...). */
  recheck: boolean;
  /** Set when the line is not an AT command at all (a hint for the operator). */
  notAt?: string;
}

interface Rule {
  /** Matches the upper-cased command (without the AT prefix and the separators). */
  test: RegExp;
  reason: string;
}

const SET = String.raw`(?:=(?!\?)|$)`; // a set or an action, not `?` or `=?`

const REFUSED: readonly Rule[] = [
  { test: /^Z\d*$/, reason: 'ATZ resets the modem to its stored profile (echo, PDU mode and indications are lost)' },
  { test: /^&F\d*$/, reason: 'AT&F restores factory settings (echo, PDU mode and indications are lost)' },
  { test: /^&W\d*$/, reason: 'AT&W stores the current settings as the power-on profile' },
  { test: /^E[1-9]$/, reason: 'ATE1 turns echo on; the daemon reads answers with echo off' },
  { test: /^V0$/, reason: 'ATV0 switches to numeric result codes; the daemon reads verbose ones' },
  { test: /^Q[1-9]$/, reason: 'ATQ1 suppresses result codes; every command would time out' },
  { test: new RegExp(`^\\+CFUN${SET}`), reason: 'AT+CFUN changes the radio/power state (may reset the modem)' },
  { test: new RegExp(`^\\+CNMI${SET}`), reason: 'AT+CNMI changes how new SMS are announced; the daemon could stop seeing them' },
  { test: new RegExp(`^\\+CMGF${SET}`), reason: 'AT+CMGF changes the SMS mode; the daemon reads PDU mode' },
  { test: new RegExp(`^\\+CPMS${SET}`), reason: 'AT+CPMS changes the message storage the daemon reads and deletes from' },
  { test: new RegExp(`^\\+CMGD${SET}`), reason: 'AT+CMGD deletes SMS; the daemon deletes only after the record is durable (use `pulsa-bridge sms delete`, which checks)' },
  { test: new RegExp(`^[+^$%](?:CMGDA|QMGDA|CMGDL)${SET}`), reason: 'deletes SMS in bulk (SIMCom AT+CMGDA, Quectel AT+QMGDA); SMS not yet spooled would be lost' },
  { test: new RegExp(`^\\+CNMA${SET}`), reason: 'AT+CNMA acknowledges a directly delivered SMS; only the daemon may, after spooling it' },
  { test: new RegExp(`^\\+CSMS${SET}`), reason: 'AT+CSMS changes the SMS service (who acknowledges +CMT)' },
  { test: new RegExp(`^\\+CMEE${SET}`), reason: 'AT+CMEE changes how errors are reported' },
  { test: new RegExp(`^\\+CSCS${SET}`), reason: 'AT+CSCS changes the character set USSD is sent and read in' },
  { test: new RegExp(`^\\+(?:IPR|ICF|IFC)${SET}`), reason: 'changing the baud rate or framing cuts the daemon off the modem' },
  { test: new RegExp(`^\\^CURC${SET}`), reason: 'AT^CURC changes which unsolicited reports the modem sends' },
  { test: new RegExp(`^[+^$%](?:CRESET|CPOF|RESET|QPOWD|CPWROFF|SRESET)${SET}`), reason: 'resets or powers off the modem' },
];

const RECHECK: readonly RegExp[] = [new RegExp(`^\\+CPIN${SET}`), new RegExp(`^\\+COPS${SET}`), new RegExp(`^\\+CLCK${SET}`)];

/** Splits an AT command line into its commands (upper-cased, without `AT`). */
export function splitAtLine(line: string): string[] | undefined {
  const s = line.trim();
  if (!/^AT/i.test(s)) return undefined;
  const body = stripSpacesOutsideQuotes(s.slice(2));
  const out: string[] = [];
  let i = 0;
  while (i < body.length) {
    const c = body[i]!;
    if (c === ';' || c === ' ') {
      i++;
      continue;
    }
    if (c === 'D' || c === 'd') {
      out.push(body.slice(i).toUpperCase()); // dial takes the rest of the line (`D*888#;`)
      break;
    }
    if ('+^$%*#!'.includes(c)) {
      // extended command: up to the next ';' outside quotes
      let j = i + 1;
      let quoted = false;
      while (j < body.length && (quoted || body[j] !== ';')) {
        if (body[j] === '"') quoted = !quoted;
        j++;
      }
      out.push(uppercaseOutsideQuotes(body.slice(i, j)));
      i = j;
      continue;
    }
    // basic command: [&]letter followed by digits (or `=value` / `?`)
    const m = /^&?[A-Za-z]\d*(?:=\??\d*|\?)?/.exec(body.slice(i));
    if (!m) {
      out.push(body.slice(i).toUpperCase());
      break;
    }
    out.push(m[0].toUpperCase());
    i += m[0].length;
  }
  return out;
}

/** V.250: a modem ignores spaces in a command line outside quoted strings (`AT+CMGD =1` is `AT+CMGD=1`). */
function stripSpacesOutsideQuotes(s: string): string {
  return s.replace(/("[^"]*")|([^"]+)/g, (_, q: string | undefined, plain: string | undefined) => q ?? plain!.replace(/[ \t]/g, ''));
}

function uppercaseOutsideQuotes(s: string): string {
  return s.replace(/("[^"]*")|([^"]+)/g, (_, q: string | undefined, plain: string | undefined) => q ?? plain!.toUpperCase());
}

function suggest(t: string): string {
  if (/^&?[A-Za-z]\d*$/.test(t)) return `AT${t}`; // a basic command: I, Z, &V
  return `AT${/^[+^$%]/.test(t) ? '' : '+'}${t}`;
}

export function checkAtLine(line: string): AtGuardVerdict {
  const commands = splitAtLine(line);
  if (commands === undefined) {
    const t = line.trim();
    return {
      commands: [],
      refused: [],
      recheck: false,
      notAt: t.length === 0 ? 'empty command' : `"${t}" does not start with AT; did you mean "${suggest(t)}"?`,
    };
  }
  const refused: string[] = [];
  let recheck = false;
  for (const c of commands) {
    for (const r of REFUSED) if (r.test.test(c)) refused.push(r.reason);
    if (RECHECK.some((r) => r.test(c))) recheck = true;
  }
  return { commands, refused: [...new Set(refused)], recheck: recheck || refused.length > 0 };
}
