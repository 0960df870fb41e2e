/**
 * Quectel LTE/UMTS modules (EC25, EC21, EG25, BG96, UC20) on native USB.
 */
import type { ModemProfile } from '../types.js';
import { genericDefaults } from './generic.js';

export const quectel: ModemProfile = {
  ...genericDefaults(),
  id: 'quectel',
  description: 'Quectel EC25 / EC21 / EG25 / BG96 / UC20',
  manufacturer: /quectel/i,
  model: /^(EC2[0-9]|EG[0-9]{2}|BG9[0-9]|UC[0-9]{2}|M95|M66)/i,
  usb: [
    { vendorId: '2c7c', productId: '0125', description: 'Quectel EC25 / EG25' },
    { vendorId: '2c7c', productId: '0121', description: 'Quectel EC21' },
    { vendorId: '2c7c', productId: '0296', description: 'Quectel BG96' },
    { vendorId: '2c7c', description: 'Quectel module' },
  ],
  urcs: [
    // Quectel: +QUSIM: 1 after boot (USIM detected) and +QIND: SMS DONE / PB DONE / ... status indications.
    {
      name: 'qusim',
      pattern: /^\+QUSIM:\s*\d/i,
      parse: (l) => ({ usim: Number((l[0] ?? '').split(':')[1]) }),
      description: 'Quectel (U)SIM type after boot',
    },
    {
      name: 'qind',
      pattern: /^\+QIND:/i,
      responseTo: ['AT+QIND'],
      parse: (l) => ({ event: (l[0] ?? '').slice((l[0] ?? '').indexOf(':') + 1).trim() }),
      description: 'Quectel status indication',
    },
  ],
  // Quectel: RDY after init means the module reset (it may also re-enumerate on USB and close the port).
  rebootUrcs: ['rdy'],
  // Quectel: +QUSIM at every boot.
  resetHintUrcs: ['qusim', ...genericDefaults().resetHintUrcs],
  ussd: { send: 'text', charset: 'GSM' },
  // Quectel: AT+QPINC="SC" gives the SIM PIN and PUK tries left.
  pinTriesCommands: ['AT+QPINC="SC"', 'AT+CPINR="SIM PIN"'],
};
