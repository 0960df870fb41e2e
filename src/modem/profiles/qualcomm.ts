/**
 * Modems that identify as Qualcomm (unbranded Chinese USB sticks and modem pools on Qualcomm chipsets).
 */
import type { ModemProfile } from '../types.js';
import { genericDefaults } from './generic.js';

export const qualcomm: ModemProfile = {
  ...genericDefaults(),
  id: 'qualcomm',
  description: 'Qualcomm-based modem (unbranded sticks, modem pools)',
  manufacturer: /qualcomm/i,
  usb: [{ vendorId: '05c6', description: 'Qualcomm-based modem' }],
  // Qualcomm-based: AT+CNMI=? advertises ds=1 but only bm=2 / ds in these combinations are accepted.
  cnmiFallbacks: ['2,1,2,1,0', '2,1,2,2,0', '2,1,2,0,0'],
};
