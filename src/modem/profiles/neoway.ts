/**
 * Neoway M590 / M660 GSM modules (cheap boards on a USB-serial adapter).
 */
import type { ModemProfile } from '../types.js';
import { genericDefaults } from './generic.js';

export const neoway: ModemProfile = {
  ...genericDefaults(),
  id: 'neoway',
  description: 'Neoway M590 / M660',
  manufacturer: /neoway/i,
  model: /^M(590|660)/i,
  usb: [],
  urcs: [
    // Neoway M590: MODEM:STARTUP at power-on, +PBREADY once SIM phonebook and SMS are usable.
    { name: 'modem-startup', pattern: /^MODEM:STARTUP$/i, description: 'Neoway module started' },
    { name: 'pbready', pattern: /^\+PBREADY$/i, description: 'Neoway SIM ready for SMS/phonebook' },
  ],
  // Neoway M590: SMS commands fail until +PBREADY.
  smsReady: { urc: 'pbready', timeoutMs: 30_000 },
  // Neoway M590: MODEM:STARTUP after init means it restarted.
  rebootUrcs: ['modem-startup'],
  // Neoway M590: reports each incoming SMS twice (two identical +CMTI).
  duplicateIndications: true,
};
