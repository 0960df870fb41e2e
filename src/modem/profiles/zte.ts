/**
 * ZTE USB sticks in modem mode (MF190, MF110, MF626, MF667).
 */
import type { ModemProfile } from '../types.js';
import { genericDefaults } from './generic.js';

export const zte: ModemProfile = {
  ...genericDefaults(),
  id: 'zte',
  description: 'ZTE stick (MF190, MF110, MF626, MF667)',
  manufacturer: /\bZTE\b/i,
  model: /^MF[0-9]{3}/i,
  usb: [
    { vendorId: '19d2', productId: '0031', description: 'ZTE MF110 / MF626 in modem mode' },
    { vendorId: '19d2', description: 'ZTE modem' },
  ],
  urcs: [
    // ZTE MF sticks: +ZUSIMR / +ZPASR / +ZDONR / +ZEND status URCs arrive at any time.
    { name: 'zusimr', pattern: /^\+ZUSIMR:/i, description: 'ZTE SIM type report' },
    { name: 'zpasr', pattern: /^\+ZPASR:/i, responseTo: ['AT+ZPAS'], description: 'ZTE network type report' },
    { name: 'zdonr', pattern: /^\+ZDONR:/i, description: 'ZTE operator/roaming report' },
    { name: 'zend', pattern: /^\+ZEND\b/i, description: 'ZTE SIM toolkit end' },
  ],
  // ZTE: no RDY banner; a reset re-enumerates the USB device instead.
  rebootUrcs: [],
};
