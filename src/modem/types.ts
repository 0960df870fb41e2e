/**
 * A modem profile: the quirks of one family as data. Every quirk carries a one-line comment naming the device and
 * the reason. Vendor names appear only under src/modem/profiles/.
 */
import type { FinalResultEntry, UrcEntry } from '../at/types.js';

export type ProfileId = 'generic' | 'simcom' | 'huawei' | 'quectel' | 'wavecom' | 'zte' | 'qualcomm' | 'neoway';

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
  /** SMS commands fail until the modem says it is ready; wait for this URC (name in the URC table) at most this long. */
  smsReady?: { urc: string; timeoutMs: number };
  /** URC names that, once init is done, mean the modem rebooted (re-run init, sweep). */
  rebootUrcs: string[];
  /** URC names that mean SMS storage is full. */
  storageFullUrcs: string[];
  /** CNMI settings tried in order when AT+CNMI=? cannot be used or the negotiated one fails. */
  cnmiFallbacks: string[];
  /** How USSD is sent: as text in the current charset, as packed GSM 7-bit hex, or by ATD<code>; */
  ussd: { send: 'text' | 'packed-hex' | 'atd'; charset?: 'GSM' | 'IRA' };
  /** Device reports every incoming SMS twice (+CMTI twice): dedupe indications. */
  duplicateIndications?: boolean;
  /** +CPIN: READY may come without a trailing OK. */
  cpinWithoutOk?: boolean;
  /** Preferred SMS storage order. */
  storagePreference: Array<'SM' | 'ME' | 'MT'>;
}
