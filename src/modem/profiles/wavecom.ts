/**
 * Wavecom Fastrack / Sierra Wireless Q24xx-based GSM terminals (RS-232, often at 9600 baud).
 */
import { AtCommandError } from '../../errors.js';
import { infoValue } from '../parse.js';
import type { ModemProfile, StepAt } from '../types.js';
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
  steps: {
    // Wavecom: AT+CPIN? answers `+CPIN: READY` without a trailing OK on some firmware: a short timeout, and the
    // answer is taken from the lines of the timed-out command.
    readSimState: async (at: StepAt) => {
      try {
        return (await at.run('AT+CPIN?', { timeoutMs: 3000 })).lines;
      } catch (err) {
        if (err instanceof AtCommandError && err.code === 'AT_TIMEOUT' && infoValue(err.lines, '+CPIN') !== undefined) return err.lines;
        throw err;
      }
    },
  },
  // Wavecom: USSD only works with AT+CSCS="GSM".
  ussd: { send: 'text', charset: 'GSM' },
};
