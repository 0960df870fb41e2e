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
  // Wavecom Multiband / Fastrack: AT+CPIN? answers `+CPIN: READY` (or `+CPIN: SIM PIN`) and never an OK after it
  // (python-gsmmodem fakemodems.py WavecomMultiband900E1800; ModemManager's Wavecom plugin): the line itself ends the
  // command at once. Other modems get the same answer after the channel's quiet time.
  finalResults: [
    {
      pattern: /^\+CPIN:\s*\S/i,
      ok: true,
      command: 'AT+CPIN?',
      isAnswer: true,
      device: 'Wavecom Multiband / Fastrack',
      source: 'python-gsmmodem test/fakemodems.py; ModemManager plugins/wavecom',
    },
  ],
  // Wavecom: USSD only works with AT+CSCS="GSM".
  ussd: { send: 'text', charset: 'GSM' },
};
