/**
 * Wavecom Fastrack / Sierra Wireless Q24xx-based GSM terminals (RS-232, often at 9600 baud).
 */
import type { ModemProfile } from '../types.js';
import { genericDefaults } from './generic.js';

export const wavecom: ModemProfile = {
  ...genericDefaults(),
  id: 'wavecom',
  description: 'Wavecom Fastrack (Q24xx / WMP)',
  manufacturer: /wavecom/i,
  model: /(MULTIBAND|FASTRACK|Q24[0-9]{2}|WMP[0-9]+)/i,
  usb: [{ vendorId: '114f', description: 'Wavecom modem' }],
  urcs: [
    // Wavecom: +WIND: <event> general indications (SIM inserted/removed, ready, network lost ...).
    {
      name: 'wind',
      pattern: /^\+WIND:\s*\d+/i,
      responseTo: ['AT+WIND'],
      parse: (l) => {
        const [event, ...rest] = (l[0] ?? '').slice((l[0] ?? '').indexOf(':') + 1).split(',');
        return { event: Number(event), args: rest.map((r) => r.trim()) };
      },
      description: 'Wavecom general indication',
    },
  ],
  // Wavecom: no RDY banner; restarts are seen as +WIND indications only when enabled.
  rebootUrcs: [],
  // Wavecom: AT+CPIN? answers `+CPIN: READY` without a trailing OK on some firmware.
  cpinWithoutOk: true,
  // Wavecom: USSD only works with AT+CSCS="GSM".
  ussd: { send: 'text', charset: 'GSM' },
};
