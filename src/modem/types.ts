/**
 * A modem profile: the quirks of one family as data. Every quirk carries a one-line comment naming the device and
 * the reason. Vendor names appear only under src/modem/profiles/.
 */
import type { AtResponse, AtRunOptions, FinalResultEntry, UrcEntry } from '../at/types.js';

/**
 * Every profile id, declared once: the type, the registry's completeness test, config validation and the CLI's
 * --profile choices are derived from it. The order is the one shown to operators (choices, config errors).
 */
export const PROFILE_IDS = ['generic', 'simcom', 'huawei', 'quectel', 'wavecom', 'zte', 'qualcomm', 'neoway'] as const;

export type ProfileId = (typeof PROFILE_IDS)[number];

/** What a config or the CLI may name: a profile, or 'auto' (detected from AT+CGMI / AT+CGMM). */
export const PROFILE_SETTINGS = ['auto', ...PROFILE_IDS] as const;

export type ProfileSetting = (typeof PROFILE_SETTINGS)[number];

export function isProfileId(id: string): id is ProfileId {
  return (PROFILE_IDS as readonly string[]).includes(id);
}

/** What a profile step may do on the modem: run a command (a closed port surfaces as PortError). */
export interface StepAt {
  run(command: string, options?: AtRunOptions): Promise<AtResponse>;
}

/**
 * Steps a profile may replace (ModemManager style: a vendor plugin overrides one slot, the generic modem is the
 * fallback). Each override carries a one-line comment naming the device and why.
 */
export interface ModemSteps {
  /** AT+CPIN? -> its answer lines. A thrown AtCommandError is classified by the generic SIM step (+CME 10, 11, ...). */
  readSimState(at: StepAt): Promise<readonly string[]>;
  /**
   * The command that sends `text` (already checked: no quote or control character) as a USSD string: the code that
   * opens a session, or an answer to a menu (`kind`, default 'open'). Throws when it cannot.
   */
  ussdCommand(text: string, kind?: 'open' | 'reply'): string;
  /** The text of a +CUSD payload. */
  ussdText(payload: string, dcs: number | undefined): string;
}

export interface UsbFingerprint {
  vendorId: string; // lower-case hex, 4 digits
  productId?: string;
  description: string;
}

export interface ModemProfile {
  id: ProfileId;
  description: string;
  /** Detection from AT+CGMI / AT+CGMM answers. */
  manufacturer?: RegExp;
  model?: RegExp;
  usb: UsbFingerprint[];
  /** URC rows that come before the generic table. */
  urcs: UrcEntry[];
  /** Final-result rows added to the generic table. */
  finalResults: FinalResultEntry[];
  /** Commands run at the end of init (e.g. silencing URC noise). Failures are logged, not fatal. */
  initCommands: string[];
  /**
   * SMS commands fail until the modem says it is ready; wait for this URC (name in the URC table), or one of
   * `alsoUrcs` (another firmware's banner for the same moment), at most this long.
   */
  smsReady?: { urc: string; alsoUrcs?: string[]; timeoutMs: number };
  /** URC names that, once init is done, mean the modem rebooted (re-run init, sweep). */
  rebootUrcs: string[];
  /**
   * URC names that, once init is done, suggest the modem restarted (a boot banner, or periodic URCs that init had
   * silenced): the state probe checks the settings and init runs again only when they are gone. Every family's list
   * is watched on every modem, so a modem that prints another family's banner is noticed too.
   */
  resetHintUrcs: string[];
  /** URC names that mean SMS storage is full. */
  storageFullUrcs: string[];
  /** CNMI settings tried in order when AT+CNMI=? cannot be used or the negotiated one fails. */
  cnmiFallbacks: string[];
  /** How the generic USSD step sends: as text in `charset` (AT+CSCS before it when set), or by ATD<code>; */
  ussd: { send: 'text' | 'atd'; charset?: 'GSM' | 'IRA' | 'UCS2' };
  /** ICCID commands tried in order until one answers with an ICCID (27.007 has none, every vendor has its own). */
  iccidCommands: string[];
  /** Commands that tell the PIN tries left, tried in order until one answers (src/modem/pin-tries.ts reads them). */
  pinTriesCommands: string[];
  /** Device reports every incoming SMS twice (+CMTI twice): dedupe indications. */
  duplicateIndications?: boolean;
  /** Generic steps this family replaces. */
  steps?: Partial<ModemSteps>;
  /** Preferred SMS storage order. */
  storagePreference: Array<'SM' | 'ME' | 'MT'>;
}
