/**
 * Generic 3GPP TS 27.005/27.007 modem: no vendor quirks. Also the base the vendor profiles start from.
 * Data only; every quirk in a vendor file names the device and the reason.
 */
import type { ModemProfile } from '../types.js';

/** Fresh copies of the neutral settings (arrays are never shared between profiles). */
export function genericDefaults(): Omit<ModemProfile, 'id' | 'description'> {
  return {
    usb: [],
    urcs: [],
    finalResults: [],
    initCommands: [],
    // A module that says RDY after init has restarted (settings such as CNMI are lost).
    rebootUrcs: ['rdy'],
    // Boot banners of 27.007 modems (SIM800, SIM7600, Quectel, Neoway print some of them at power-up).
    resetHintUrcs: ['rdy', 'sms-ready', 'call-ready', 'sms-done', 'pb-done', 'cfun', 'cpin'],
    storageFullUrcs: [],
    cnmiFallbacks: [],
    ussd: { send: 'text', charset: 'IRA' },
    // 27.007 has no ICCID command; the generic modem asks every family's in turn (first answer wins).
    iccidCommands: [
      'AT+CCID', // SIMCom SIM800, Neoway, Wavecom
      'AT+ICCID', // Telit, Sierra Wireless and others
      'AT+QCCID', // Quectel
      'AT+CICCID', // SIMCom SIM7600
      'AT^ICCID?', // Huawei
    ],
    storagePreference: ['SM', 'ME', 'MT'],
    // 27.007 AT+CPINR (not every firmware has it: then only the memory of rejected PINs protects the SIM).
    pinTriesCommands: ['AT+CPINR="SIM PIN"'],
  };
}

export const generic: ModemProfile = {
  id: 'generic',
  description: 'Generic 3GPP modem (27.005/27.007)',
  ...genericDefaults(),
};
