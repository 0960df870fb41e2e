/**
 * The virtual modems of this process, by port: opening `virtual:<name>?...` (serial/port-kind.ts) opens the device
 * registered there, or builds it from the port's settings and keeps it for the life of the process (a SIM keeps its
 * SMS across the daemon's reconnects), its SIM joined to the process's one virtual network when it has a number and
 * an operator. Tests and the demo reach the devices and the network here; configureVirtualModems() sets what devices
 * built afterwards start with (boot delays, noise); stopVirtualModems() powers off those built here.
 */
import { createHash } from 'node:crypto';
import { PortError } from '../errors.js';
import type { SerialLink } from '../serial/link.js';
import { isVirtualPort, VIRTUAL_PORT_PREFIX } from '../serial/port-kind.js';
import { OPERATORS, type OperatorKey } from '../balance/operators.js';
import { VirtualNetwork } from './operator-network.js';
import { getVirtualDevice, openVirtualLink } from './virtual-link.js';
import { VirtualModem, type VirtualModemOptions } from './virtual-modem.js';
import { VIRTUAL_QUIRKS, type VirtualQuirk } from './virtual-modem-types.js';

/** What a virtual port says about its device and SIM. */
export interface VirtualPortSpec {
  /** `virtual:<name>`: where the device is registered. */
  path: string;
  name: string;
  number?: string;
  operator?: OperatorKey;
  balance?: number;
  activeUntil?: string;
  quirks: VirtualQuirk[];
  pin?: string;
  /** Two operator SMS on the SIM at power-up (`--simulate`'s device: `sms list` shows something). */
  samples: boolean;
}

const KEYS = ['number', 'operator', 'balance', 'activeUntil', 'quirks', 'pin', 'samples'];

/** Reads a virtual port; throws PortError PORT_NOT_FOUND naming what is wrong. */
export function parseVirtualPort(port: string): VirtualPortSpec {
  const bad = (what: string) =>
    new PortError('PORT_NOT_FOUND', `${port}: ${what}`, {
      hint: 'a virtual port is virtual:<name>, optionally ?number=08...&operator=telkomsel&balance=50000&activeUntil=YYYY-MM-DD&quirks=a,b&pin=1234',
    });
  if (!isVirtualPort(port)) throw bad('not a virtual port');
  const [name = '', query = ''] = port.slice(VIRTUAL_PORT_PREFIX.length).split('?', 2);
  if (!/^[A-Za-z0-9_.-]{1,60}$/.test(name)) throw bad('the name must be 1 to 60 letters, digits, ., - or _');
  const q = new URLSearchParams(query);
  for (const key of q.keys()) if (!KEYS.includes(key)) throw bad(`unknown setting ${key} (known: ${KEYS.join(', ')})`);
  const spec: VirtualPortSpec = {
    path: `${VIRTUAL_PORT_PREFIX}${name}`,
    name,
    quirks: [],
    samples: q.get('samples') === '1',
  };
  const number = q.get('number');
  if (number !== null) {
    if (!/^(?:\+?62|0)8\d{7,12}$/.test(number)) throw bad(`number ${number} is not an Indonesian mobile number`);
    spec.number = number;
  }
  const operator = q.get('operator');
  if (operator !== null) {
    if (!(OPERATORS as readonly string[]).includes(operator))
      throw bad(`operator ${operator} is not one of ${OPERATORS.join(', ')}`);
    spec.operator = operator as OperatorKey;
  }
  const balance = q.get('balance');
  if (balance !== null) {
    if (!/^\d{1,9}$/.test(balance)) throw bad(`balance ${balance} is not a whole number of rupiah`);
    spec.balance = Number(balance);
  }
  const activeUntil = q.get('activeUntil');
  if (activeUntil !== null) {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(activeUntil)) throw bad(`activeUntil ${activeUntil} is not a date YYYY-MM-DD`);
    spec.activeUntil = activeUntil;
  }
  for (const quirk of (q.get('quirks') ?? '').split(',').filter(Boolean)) {
    if (!(VIRTUAL_QUIRKS as readonly string[]).includes(quirk))
      throw bad(`unknown quirk ${quirk} (known: ${VIRTUAL_QUIRKS.join(', ')})`);
    spec.quirks.push(quirk as VirtualQuirk);
  }
  const pin = q.get('pin');
  if (pin !== null) {
    if (!/^\d{4,8}$/.test(pin)) throw bad('pin must be 4 to 8 digits');
    spec.pin = pin;
  }
  // The balance and the active period live on the SIM's line of the virtual network, which needs both.
  const lineOnly = (['balance', 'activeUntil'] as const).filter((k) => spec[k] !== undefined);
  if (lineOnly.length > 0 && !(spec.number && spec.operator))
    throw bad(
      `${lineOnly.join(' and ')} need${lineOnly.length === 1 ? 's' : ''} number and operator too (the SIM's line)`,
    );
  return spec;
}

/** The two operator SMS a `samples=1` SIM holds at power-up. */
export const SAMPLE_SMS: ReadonlyArray<{ from: string; text: string }> = [
  {
    from: '858',
    text: 'Anda mendapatkan penambahan pulsa Rp 5000 dari nomor 6282112235774 tgl 2018-01-08. Cek pulsa melalui *888#. Info CS: 188',
  },
  { from: '168', text: 'Nikmati Xtra Combo! Anda menerima Pulsa dari 6285941020493 sebesar Rp7000.' },
];

/** `n` decimal digits drawn from a name (stable: the same name gives the same digits). */
function digitsOf(name: string, salt: string, n: number): string {
  const hex = createHash('sha256').update(`${salt}:${name}`).digest('hex');
  return BigInt(`0x${hex}`).toString().slice(0, n).padStart(n, '0');
}

/** The Luhn check digit of an IMEI's first 14 digits. */
function luhn(digits: string): string {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) d *= 2;
    sum += d > 9 ? d - 9 : d;
  }
  return String((10 - (sum % 10)) % 10);
}

/** A virtual modem's identity from its name: a valid IMEI (Luhn), an IMSI and ICCID of the Telkomsel network. */
function identityOf(name: string): { imei: string; imsi: string; iccid: string } {
  const imei14 = `35693803${digitsOf(name, 'imei', 6)}`;
  return {
    imei: imei14 + luhn(imei14),
    imsi: `51010${digitsOf(name, 'imsi', 10)}`,
    iccid: `896210${digitsOf(name, 'iccid', 14)}`,
  };
}

let network: VirtualNetwork | undefined;
const built = new Map<string, VirtualModem>();
let defaults: Partial<VirtualModemOptions> = {};
const providers = new Map<string, (path: string) => VirtualModem>();

/**
 * The device of `port` is built by `build` (and started by it) when the port is first opened: a scripted, stalled or
 * PIN-locked modem for a test or a demo. Returns the function that withdraws it.
 */
export function provideVirtualModem(port: string, build: (path: string) => VirtualModem): () => void {
  const path = parseVirtualPort(port).path;
  providers.set(path, build);
  return () => {
    if (providers.get(path) === build) providers.delete(path);
  };
}

/** The process's virtual network (built on first use). */
export function virtualNetwork(): VirtualNetwork {
  network ??= new VirtualNetwork();
  return network;
}

/** What virtual modems built from now on start with (demo, benchmarks, tests); returns the function that undoes it. */
export function configureVirtualModems(options: Partial<VirtualModemOptions>): () => void {
  const before = defaults;
  defaults = { ...options };
  return () => {
    defaults = before;
  };
}

/** The virtual modem at a port (`virtual:<name>`, settings ignored), or undefined. */
export function virtualModemAt(port: string): VirtualModem | undefined {
  const device = getVirtualDevice(parseVirtualPort(port).path);
  return device instanceof VirtualModem ? device : undefined;
}

/**
 * Builds and starts the device a port describes, unless one is registered there or was built here before (a device
 * powered off or unplugged stays so: its port is then missing, as an unplugged stick's).
 */
export function ensureVirtualModem(port: string): VirtualModem | undefined {
  const spec = parseVirtualPort(port);
  const earlier = built.get(spec.path);
  if (earlier) return earlier;
  const existing = getVirtualDevice(spec.path);
  if (existing) return existing instanceof VirtualModem ? existing : undefined;
  const provided = providers.get(spec.path)?.(spec.path);
  if (provided) {
    built.set(spec.path, provided);
    return provided;
  }
  const line =
    spec.number && spec.operator
      ? virtualNetwork().join({
          number: spec.number,
          operator: spec.operator,
          ...(spec.balance !== undefined ? { balance: spec.balance } : {}),
          ...(spec.activeUntil ? { activeUntil: spec.activeUntil } : {}),
        })
      : undefined;
  const vm = new VirtualModem({
    path: spec.path,
    profile: 'simcom',
    ...defaults,
    ...(spec.samples ? { bootStepMs: 0 } : {}), // --simulate's device answers at once
    ...(spec.pin ? { pin: spec.pin } : {}),
    ...(spec.quirks.length > 0 ? { quirks: spec.quirks } : {}),
    // Each device its own IMEI, IMSI and ICCID (from its name: the same across restarts), unless the defaults say.
    identity: {
      ...(spec.samples ? {} : identityOf(spec.name)),
      ...defaults.identity,
      ...(line ? { ownNumber: line.ownNumber } : {}),
    },
    ...(line ? { ussdMenus: line.ussdMenus, onSmsSubmitted: line.onSmsSubmitted } : {}),
  });
  line?.connect(vm);
  vm.start();
  if (spec.samples) for (const sms of SAMPLE_SMS) vm.injectSms(sms);
  built.set(spec.path, vm);
  return vm;
}

/** The link factory's way in (modem/factory.ts): the device of `port`, built when needed, opened like a serial port. */
export async function openVirtualPort(port: string): Promise<SerialLink> {
  ensureVirtualModem(port);
  return openVirtualLink(parseVirtualPort(port).path);
}

/** The ports (`virtual:<name>`) of the virtual modems built here and still on. */
export function builtVirtualModems(): string[] {
  return [...built.keys()];
}

/**
 * Powers off the virtual modems built here, but those in `keep` (and closes the network when none is left): the end of
 * a demo or a test.
 */
export function stopVirtualModems(keep: ReadonlySet<string> = new Set()): void {
  for (const [path, vm] of built) {
    if (keep.has(path)) continue;
    vm.stop();
    built.delete(path);
  }
  if (built.size === 0) {
    network?.close();
    network = undefined;
  }
}
