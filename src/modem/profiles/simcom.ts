/**
 * SIMCom SIM800 (GSM, common on Raspberry Pi boards behind a USB-serial adapter) and SIM7600 (LTE, native USB).
 */
import type { ModemProfile } from '../types.js';
import { genericDefaults } from './generic.js';

export const simcom: ModemProfile = {
  ...genericDefaults(),
  id: 'simcom',
  description: 'SIMCom SIM800 / SIM7600 / A76xx',
  manufacturer: /SIMCOM/i,
  model: /\bSIM(800|900|7[0-9]{3}|5[0-9]{3})/i,
  usb: [
    { vendorId: '1e0e', productId: '9001', description: 'SIMCom SIM7600 / SIM7100 (USB composite)' },
    { vendorId: '1e0e', description: 'SIMCom module' },
  ],
  urcs: [
    // A7670E: `*ATREADY: 1` is the first line after power-up, before `+CPIN: READY` (LilyGo-Modem-Series issue #247).
    { name: 'atready', pattern: /^\*ATREADY:/i, description: 'SIMCom A76xx: AT interface ready after a (re)start' },
  ],
  // SIM800: AT+CMGF answers ERROR until the `SMS Ready` banner (boot takes a few seconds after `Call Ready`).
  // SIM7600 / A76xx print `SMS DONE` instead (docs/modems.md).
  smsReady: { urc: 'sms-ready', alsoUrcs: ['sms-done'], timeoutMs: 30_000 },
  // SIM800: RDY / SMS Ready after init mean the module reset (echo back on, CNMI lost).
  // SIM7600: SMS DONE after init likewise means it restarted.
  // A76xx: *ATREADY after init likewise.
  rebootUrcs: ['rdy', 'sms-ready', 'sms-done', 'atready'],
  // SIM800: AT+CNMI=2,1,0,2 is refused; these are accepted by SIM800 and SIM7600 firmware.
  cnmiFallbacks: ['2,1,0,0,0', '2,1,0,0', '1,1,0,0,0'],
  // SIM800: USSD strings and replies are exchanged in the GSM charset.
  ussd: { send: 'text', charset: 'GSM' },
  // SIM800: AT+CPINR is missing on older firmware; AT+SPIC gives PIN1/PUK1/PIN2/PUK2 tries left.
  pinTriesCommands: ['AT+SPIC', 'AT+CPINR="SIM PIN"'],
};
