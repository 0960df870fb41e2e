/**
 * Huawei USB sticks in modem (stick) mode: E173, E303, E3531, E3372 with stick firmware. HiLink firmware has no AT
 * port at all (nothing to configure here).
 */
import type { UrcEntry } from '../../at/types.js';
import { packGsm7 } from '../../sms/gsm7.js';
import type { ModemProfile } from '../types.js';
import { decodeUssdPayload } from '../ussd-codec.js';
import { genericDefaults } from './generic.js';

function fields(line: string): string[] {
  const i = line.indexOf(':');
  return i < 0
    ? []
    : line
        .slice(i + 1)
        .split(',')
        .map((f) => f.trim().replace(/^"|"$/g, ''));
}

// Huawei sticks: status URCs arrive at any time, also between a command and its OK.
const HUAWEI_URCS: UrcEntry[] = [
  {
    name: 'rssi',
    pattern: /^\^RSSI:\s*\d+/,
    parse: (l) => ({ rssi: Number(fields(l[0] ?? '')[0]) }),
    description: 'Huawei signal strength change (0..31, 99 unknown)',
  },
  {
    name: 'hcsq',
    pattern: /^\^HCSQ:/,
    responseTo: ['AT^HCSQ'],
    parse: (l) => {
      const [sysmode, ...values] = fields(l[0] ?? '');
      return { sysmode, values: values.map(Number) };
    },
    description: 'Huawei extended signal quality',
  },
  { name: 'hw-boot', pattern: /^\^BOOT:/, description: 'Huawei periodic ^BOOT heartbeat (not a restart)' },
  { name: 'mode', pattern: /^\^MODE:/, description: 'Huawei system mode change' },
  { name: 'dsflowrpt', pattern: /^\^DSFLOWRPT:/, description: 'Huawei data-flow report (every 2 s while online)' },
  { name: 'srvst', pattern: /^\^SRVST:/, description: 'Huawei service state change' },
  { name: 'simst', pattern: /^\^SIMST:/, description: 'Huawei SIM state change' },
  { name: 'nwtime', pattern: /^\^NWTIME:/, responseTo: ['AT^NWTIME'], description: 'Huawei network time' },
  {
    name: 'smmemfull',
    pattern: /^\^SMMEMFULL:/,
    parse: (l) => ({ storage: fields(l[0] ?? '')[0] }),
    description: 'Huawei SMS storage full: new SMS are refused until some are deleted',
  },
  { name: 'sysstart', pattern: /^\^SYSSTART$/, description: 'Huawei module started (boot banner)' },
  { name: 'stin', pattern: /^\^STIN:/, description: 'Huawei SIM toolkit indication' },
  { name: 'cend', pattern: /^\^CEND:/, description: 'Huawei call ended' },
  { name: 'orig', pattern: /^\^ORIG:/, description: 'Huawei call originated' },
  { name: 'conf', pattern: /^\^CONF:/, description: 'Huawei call ringing back' },
  { name: 'conn', pattern: /^\^CONN:/, description: 'Huawei call connected' },
];

export const huawei: ModemProfile = {
  ...genericDefaults(),
  id: 'huawei',
  description: 'Huawei stick (E173, E303, E3531, E3372 stick mode)',
  manufacturer: /huawei/i,
  model: /^(E1[0-9]{2,3}|E3[0-9]{2,3}|E3372|E8[0-9]{3}|K[0-9]{4})/i,
  usb: [
    { vendorId: '12d1', productId: '1001', description: 'Huawei stick in modem mode (E1xx family)' },
    { vendorId: '12d1', productId: '1436', description: 'Huawei stick in modem mode (E173 / E1750 family)' },
    { vendorId: '12d1', productId: '1506', description: 'Huawei stick in modem mode (E3372 / E3131 stick firmware)' },
    { vendorId: '12d1', description: 'Huawei modem' },
  ],
  urcs: HUAWEI_URCS,
  // Huawei: unknown or unsupported commands end with `COMMAND NOT SUPPORT` instead of ERROR.
  finalResults: [{ pattern: /^COMMAND NOT SUPPORT$/i, ok: false }],
  // Huawei: AT^CURC=0 silences most periodic status URCs (^RSSI, ^DSFLOWRPT, ^BOOT, ...).
  initCommands: ['AT^CURC=0'],
  // Huawei: no banner at restart (the USB device re-enumerates and the port closes instead).
  rebootUrcs: [],
  // Huawei: ^SYSSTART / ^SIMST at boot; ^RSSI, ^BOOT, ^MODE, ^DSFLOWRPT come back after init only when the stick
  // restarted (AT^CURC=0 lost).
  resetHintUrcs: ['sysstart', 'simst', 'rssi', 'hw-boot', 'mode', 'dsflowrpt', ...genericDefaults().resetHintUrcs],
  // Huawei: ^SMMEMFULL when SMS storage is full.
  storageFullUrcs: ['smmemfull'],
  // Huawei: no AT+CSCS before USSD (the packed hex below does not depend on the charset).
  ussd: { send: 'text' },
  // Huawei sticks: no AT+CPINR; AT^CPIN? carries the PIN and PUK tries left.
  pinTriesCommands: ['AT^CPIN?', 'AT+CPINR="SIM PIN"'],
  steps: {
    // Huawei: USSD must be sent as packed GSM 7-bit hex ...
    ussdCommand: (text) => {
      let packed: string;
      try {
        packed = packGsm7(text);
      } catch (err) {
        throw new RangeError('cannot be sent as GSM 7-bit', { cause: err });
      }
      return `AT+CUSD=1,"${packed}",15`;
    },
    // ... and its replies come back packed.
    ussdText: (payload, dcs) => decodeUssdPayload(payload, dcs, { packed: true }).text,
  },
};
