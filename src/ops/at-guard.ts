/**
 * Which raw AT commands an operator may send through the running daemon without `--force`. PURE.
 * Refused unless forced: whatever would change what the daemon set at init or relies on (echo, verbose results, PDU
 * mode, storage, CNMI, CSMS, CMEE, CSCS, the baud rate, deleting or acknowledging SMS before they are spooled), resets
 * and power-off, PIN/PUK/password entries (wrong ones lock the SIM) and deregistration: REFUSED below, one reason each.
 * Every command of the line is checked, read as a modem reads it (V.250: basic commands run together, extended ones
 * separated by `;`, leading zeros and dial modifiers ignored). Queries and tests (`?`, `=?`) are always allowed.
 */

export interface AtGuardVerdict {
  /** Each command of the line, as parsed (`+CSQ`, `E1`, `D*888#;`). */
  commands: string[];
  /** Why the line is refused without --force (empty: allowed). */
  refused: string[];
  /** The daemon must re-check its settings after this line runs (forced lines, and e.g. AT+CPIN=...). */
  recheck: boolean;
  /** What the line dials or sends that can move credit (USSD codes, dial strings, AT+CUSD), for the info log. */
  moves: string[];
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
  { test: /^E0*[1-9]/, reason: 'ATE1 turns echo on; the daemon reads answers with echo off' },
  {
    test: /^V0*$/,
    reason: 'ATV0 (or ATV: a missing value is 0) switches to numeric result codes; the daemon reads verbose ones',
  },
  { test: /^Q0*[1-9]/, reason: 'ATQ1 suppresses result codes; every command would time out' },
  { test: new RegExp(`^\\+CFUN${SET}`), reason: 'AT+CFUN changes the radio/power state (may reset the modem)' },
  {
    test: new RegExp(`^\\+CNMI${SET}`),
    reason: 'AT+CNMI changes how new SMS are announced; the daemon could stop seeing them',
  },
  { test: new RegExp(`^\\+CMGF${SET}`), reason: 'AT+CMGF changes the SMS mode; the daemon reads PDU mode' },
  {
    test: new RegExp(`^\\+CPMS${SET}`),
    reason: 'AT+CPMS changes the message storage the daemon reads and deletes from',
  },
  {
    test: new RegExp(`^\\+CMGD${SET}`),
    reason:
      'AT+CMGD deletes SMS; the daemon deletes only after the record is durable (use `pulsa-bridge sms delete`, which checks)',
  },
  {
    test: new RegExp(`^[+^$%](?:CMGDA|QMGDA|CMGDL)${SET}`),
    reason: 'deletes SMS in bulk (SIMCom AT+CMGDA, Quectel AT+QMGDA); SMS not yet spooled would be lost',
  },
  {
    test: new RegExp(`^\\+CNMA${SET}`),
    reason: 'AT+CNMA acknowledges a directly delivered SMS; only the daemon may, after spooling it',
  },
  { test: new RegExp(`^\\+CSMS${SET}`), reason: 'AT+CSMS changes the SMS service (who acknowledges +CMT)' },
  { test: new RegExp(`^\\+CMEE${SET}`), reason: 'AT+CMEE changes how errors are reported' },
  { test: new RegExp(`^\\+CSCS${SET}`), reason: 'AT+CSCS changes the character set USSD is sent and read in' },
  {
    test: new RegExp(`^\\+(?:IPR|ICF|IFC)${SET}`),
    reason: 'changing the baud rate or framing cuts the daemon off the modem',
  },
  { test: new RegExp(`^\\^CURC${SET}`), reason: 'AT^CURC changes which unsolicited reports the modem sends' },
  {
    test: new RegExp(`^[+^$%](?:CRESET|CPOF|RESET|QPOWD|CPWROFF|SRESET)${SET}`),
    reason: 'resets or powers off the modem',
  },
  // SIMCom AT+CPOWD=1, Quectel AT+QRST, Telit AT#REBOOT / AT#SHDN, Sierra AT!RESET, Cinterion AT^SMSO, Telit AT+TRB.
  {
    test: new RegExp(`^(?:\\+(?:CPOWD|QRST|TRB)|#(?:REBOOT|SHDN)|!RESET|\\^SMSO)${SET}`),
    reason: 'resets or powers off the modem (vendor command)',
  },
  {
    test: /^\+CPWD=(?!\?)/,
    reason: 'AT+CPWD changes a SIM password or PIN; a wrong old one counts towards locking the SIM',
  },
  {
    test: /^\+CLCK=(?!\?$|"?[A-Z0-9]{2}"?,0*2$)/,
    reason:
      'AT+CLCK locks or unlocks a SIM facility with a password; wrong ones lock the SIM (three wrong PINs ask for the PUK)',
  },
  {
    test: /^[+^]CPIN2?=(?!\?)/,
    reason:
      "AT+CPIN= enters a PIN or PUK bypassing the daemon's memory of rejected PINs; three wrong ones lock the SIM (the daemon enters the configured PIN itself)",
  },
  { test: /^\+CSIM=(?!\?)/, reason: 'AT+CSIM sends raw commands to the SIM (PIN verification and changes included)' },
  {
    test: /^D\*\*0(?:4|42|5|52)\*/,
    reason: 'a **04/**042/**05/**052 dial code changes or unblocks a PIN; wrong ones lock the SIM',
  },
  {
    test: /^S0*[345]=(?!\?)/,
    reason:
      'ATS3/ATS4/ATS5 change the line-ending and backspace characters; the daemon cannot frame answers any more (until a power cycle)',
  },
  {
    test: /^\+COPS=0*2(?:,|$)/,
    reason: 'AT+COPS=2 deregisters from the network; no SMS arrives until it registers again',
  },
];

const RECHECK: readonly RegExp[] = [
  new RegExp(`^[+^]CPIN2?${SET}`),
  new RegExp(`^\\+COPS${SET}`),
  new RegExp(`^\\+CLCK${SET}`),
  new RegExp(`^\\+CPWD${SET}`),
];

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
      // The dial string runs to its `;` (kept: `D*888#;`), after which a modem reads further commands (V.250 6.3.1).
      const end = body.indexOf(';', i);
      out.push(body.slice(i, end < 0 ? body.length : end + 1).toUpperCase());
      if (end < 0) break;
      i = end + 1;
      continue;
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
  return s.replace(
    /("[^"]*")|([^"]+)/g,
    (_, q: string | undefined, plain: string | undefined) => q ?? plain!.replace(/[ \t]/g, ''),
  );
}

function uppercaseOutsideQuotes(s: string): string {
  return s.replace(
    /("[^"]*")|([^"]+)/g,
    (_, q: string | undefined, plain: string | undefined) => q ?? plain!.toUpperCase(),
  );
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
      moves: [],
      notAt: t.length === 0 ? 'empty command' : `"${t}" does not start with AT; did you mean "${suggest(t)}"?`,
    };
  }
  const refused: string[] = [];
  const moves: string[] = [];
  let recheck = false;
  for (const c of commands) {
    const n = dialDigits(c);
    for (const r of REFUSED) if (r.test.test(n)) refused.push(r.reason);
    if (RECHECK.some((r) => r.test(c))) recheck = true;
    const move = movesCredit(c);
    if (move) moves.push(move);
  }
  return { commands, refused: [...new Set(refused)], recheck: recheck || refused.length > 0, moves };
}

/**
 * A dial command with its modifiers dropped (`DT**04*…`, `DP,**04*…` are `D**04*…` to the network: V.250 T/P/W/`,`/`!`/
 * `@`, 27.007 I/G); other commands as they are. For matching only.
 */
function dialDigits(c: string): string {
  return /^D/.test(c) ? `D${c.slice(1).replace(/[TPW,!@IG]/g, '')}` : c;
}

/**
 * What a command of the line dials or sends that can move credit or change the SIM (a USSD code, a dial string, a
 * message sent or written); undefined for the rest.
 */
function movesCredit(c: string): string | undefined {
  if (/^D/.test(c)) return `dials ${c.slice(1).replace(/;$/, '')}`;
  if (/^\+CUSD=/.test(c) && !/^\+CUSD=\?$/.test(c)) return `USSD AT${c}`;
  if (/^\+(?:CMGS|CMSS|CMGW)=/.test(c) && !/=\?$/.test(c)) return `sends or stores an SMS (AT${c})`;
  if (/^(?:[+^]CPIN2?|\+(?:CPWD|CLCK|CSIM))=/.test(c) && !/=\?$/.test(c) && !/^\+CLCK="?[A-Z0-9]{2}"?,0*2$/.test(c))
    return `changes the SIM's PIN or locks (AT${c})`;
  if (/^\+COPS=/.test(c) && !/=\?$/.test(c)) return `changes the network registration (AT${c})`;
  return undefined;
}
