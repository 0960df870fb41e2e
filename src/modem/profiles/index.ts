/**
 * The profile registry: lookup by id, detection from AT+CGMI / AT+CGMM answers, and the USB fingerprints that let
 * a scan name what is plugged in before any AT command. PURE data + lookups.
 * Invariants: detectProfile always returns a profile (generic when nothing matches); vendor profiles are tried
 * before generic, more specific ones first.
 */
import type { FinalResultEntry, UrcEntry } from '../../at/types.js';
import { matchFingerprint } from '../../serial/fingerprint.js';
import { isProfileId, PROFILE_IDS, PROFILE_SETTINGS, type ModemProfile, type ProfileId } from '../types.js';
import { GENERIC_URCS } from '../urcs.js';
import { generic } from './generic.js';
import { huawei } from './huawei.js';
import { neoway } from './neoway.js';
import { qualcomm } from './qualcomm.js';
import { quectel } from './quectel.js';
import { simcom } from './simcom.js';
import { wavecom } from './wavecom.js';
import { zte } from './zte.js';

export { generic, huawei, neoway, qualcomm, quectel, simcom, wavecom, zte };

/** Detection order: vendor families, then generic. */
export const PROFILES: readonly ModemProfile[] = Object.freeze([
  neoway,
  simcom,
  huawei,
  quectel,
  wavecom,
  zte,
  qualcomm,
  generic,
]);

export { isProfileId, PROFILE_IDS, PROFILE_SETTINGS };

/** Before the profile is known: every vendor's URC rows (they have vendor prefixes and do not overlap) + generic. */
export function detectionUrcTable(): UrcEntry[] {
  return [...PROFILES.flatMap((p) => p.urcs), ...GENERIC_URCS];
}

/** Before the profile is known: every vendor's extra final results. */
export function detectionFinalResults(): FinalResultEntry[] {
  return PROFILES.flatMap((p) => p.finalResults);
}

/** Every family's reset hints and boot banners: watched on every modem (a modem may print another family's banner). */
export const ANY_RESET_HINTS: readonly string[] = Object.freeze([
  ...new Set(PROFILES.flatMap((p) => [...p.rebootUrcs, ...p.resetHintUrcs])),
]);

/** The URC table for a known profile: its rows, every other family's reset-hint rows, then the generic ones. */
export function profileUrcTable(profile: ModemProfile): UrcEntry[] {
  const own = new Set(profile.urcs.map((u) => u.name));
  const hints = PROFILES.flatMap((p) => p.urcs).filter(
    (u) => ANY_RESET_HINTS.includes(u.name) && !own.has(u.name) && (own.add(u.name), true),
  );
  return [...profile.urcs, ...hints, ...GENERIC_URCS];
}

export function getProfile(id: ProfileId): ModemProfile {
  const found = PROFILES.find((p) => p.id === id);
  if (!found) throw new RangeError(`unknown modem profile '${String(id)}' (known: ${PROFILE_IDS.join(', ')})`);
  return found;
}

/** Picks the profile from the AT+CGMI (manufacturer) and AT+CGMM (model) answers. */
export function detectProfile(manufacturer: string, model: string): ModemProfile {
  const maker = manufacturer.trim();
  const mdl = model.trim();
  for (const p of PROFILES) if (p.manufacturer && maker !== '' && p.manufacturer.test(maker)) return p;
  for (const p of PROFILES) if (p.model && mdl !== '' && p.model.test(mdl)) return p;
  return generic;
}

export interface UsbFingerprintRow {
  vendorId: string;
  productId?: string;
  /** Profile the device most likely needs; absent for USB-serial adapters (the modem behind them is unknown). */
  profile?: ProfileId;
  description: string;
}

const USB_SERIAL_ADAPTERS: UsbFingerprintRow[] = [
  { vendorId: '1a86', productId: '7523', description: 'USB-serial adapter (SIM800 boards): WCH CH340' },
  { vendorId: '067b', productId: '2303', description: 'USB-serial adapter (SIM800 boards): Prolific PL2303' },
  { vendorId: '0403', productId: '6001', description: 'USB-serial adapter (SIM800 boards): FTDI FT232R' },
  { vendorId: '10c4', productId: 'ea60', description: 'USB-serial adapter (SIM800 boards): Silicon Labs CP210x' },
];

/** Every known vendor/product id; rows with a product id come before the vendor-wide row of the same vendor. */
export const USB_FINGERPRINTS: readonly UsbFingerprintRow[] = Object.freeze([
  ...PROFILES.flatMap((p) => p.usb.map((u) => ({ ...u, profile: p.id }))),
  ...USB_SERIAL_ADAPTERS,
]);

/** The best row for a USB device: exact vendor+product first, then vendor only. Ids are hex, any case. */
export function lookupUsb(vendorId: string, productId?: string): UsbFingerprintRow | undefined {
  return matchFingerprint(
    { vendorId: vendorId.padStart(4, '0'), productId: productId?.padStart(4, '0') },
    USB_FINGERPRINTS,
  );
}
