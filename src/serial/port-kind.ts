/**
 * What a port path names (PURE): a device node (`/dev/...`, any path) or a virtual modem (`virtual:<name>`, optionally
 * `?number=..&operator=..&balance=..&activeUntil=..&quirks=a,b&pin=..&samples=1` for its SIM; src/virtual-modem/
 * virtual-ports.ts reads them). The link factory opens each; nothing else asks which kind a modem is, but the rule
 * that made-up SMS stay on this machine: a virtual port's SMS are made up, so its webhook must be local.
 */

export const VIRTUAL_PORT_PREFIX = 'virtual:';

/** The port `--simulate` stands for in the diagnostic commands: a SIM800-like modem with two operator SMS stored. */
export const SIMULATE_PORT = `${VIRTUAL_PORT_PREFIX}cli?samples=1`;

export function isVirtualPort(path: string): boolean {
  return path.startsWith(VIRTUAL_PORT_PREFIX);
}

/** The virtual port of a modem named `name` whose SIM has this number and operator (`run --simulate`). */
export function virtualPortFor(
  name: string,
  sim: { number?: string | undefined; operator?: string | undefined } = {},
): string {
  const q = new URLSearchParams();
  if (sim.number !== undefined) q.set('number', sim.number);
  if (sim.operator !== undefined) q.set('operator', sim.operator);
  const query = q.toString();
  return `${VIRTUAL_PORT_PREFIX}${name}${query ? `?${query}` : ''}`;
}

/**
 * Why ports must not run with this webhook (undefined: they may): a virtual modem's SMS are made up, and made-up SMS
 * could approve real orders, so they are only ever posted to a webhook on this machine (`webhookIsLocal`).
 */
export function madeUpSmsProblem(
  ports: readonly string[],
  webhookIsLocal: boolean,
  webhookShown: string,
): string | undefined {
  const virtual = ports.filter(isVirtualPort);
  if (virtual.length === 0 || webhookIsLocal) return undefined;
  return `webhook: ${webhookShown} is not on this machine, and ${virtual.join(', ')} ${virtual.length === 1 ? 'is a virtual modem' : 'are virtual modems'}: their SMS are made up and are only ever posted to a webhook on this machine (run a local receiver)`;
}
