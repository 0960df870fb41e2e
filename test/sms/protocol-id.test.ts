/**
 * The TP-PID table of 3GPP TS 23.040 §9.2.3.9, row by row, and what the bridge does with each value.
 */
import { describe, expect, it } from 'vitest';
import { protocolId } from '../../src/sms/protocol-id.js';

const ALL = Array.from({ length: 256 }, (_, i) => i);

describe('TP-PID (TS 23.040 §9.2.3.9)', () => {
  it.each([
    [0x00, 'forward', 'plain SME-to-SME'],
    [0x01, 'forward', 'SME-to-SME protocol 1'],
    [0x21, 'forward', 'telematic interworking: telex'],
    [0x22, 'forward', 'telematic interworking: group 3 telefax'],
    [0x24, 'forward', 'telematic interworking: voice telephone (conversion to speech)'],
    [0x2e, 'forward', 'telematic interworking: reserved device type'],
    [0x32, 'forward', 'telematic interworking: Internet Electronic Mail'],
    [0x38, 'forward', 'telematic interworking: a device type specific to this SC'],
    [0x3f, 'forward', 'telematic interworking: a GSM/UMTS mobile station'],
    [0x40, 'discard', 'Short Message Type 0'],
    [0x41, 'forward', 'Replace Short Message Type 1'],
    [0x47, 'forward', 'Replace Short Message Type 7'],
    [0x48, 'archive', 'Device Triggering Short Message'],
    [0x49, 'forward', 'reserved (bits 7-6 = 01)'],
    [0x5e, 'forward', 'Enhanced Message Service (obsolete)'],
    [0x5f, 'forward', 'Return Call Message'],
    [0x7c, 'archive', 'ANSI-136 R-DATA'],
    [0x7d, 'archive', 'ME Data download'],
    [0x7e, 'archive', 'ME De-personalization Short Message'],
    [0x7f, 'archive', '(U)SIM Data download'],
    [0x80, 'forward', 'reserved (bits 7-6 = 10)'],
    [0xc5, 'forward', 'SC specific use'],
  ] as const)('TP-PID %i -> %s (%s)', (pid, action, name) => {
    expect(protocolId(pid)).toMatchObject({ action, name });
  });

  it('Replace Short Message Type 1-7 and the Return Call Message are the replace types', () => {
    const replacing = ALL.filter((v) => protocolId(v).replace !== undefined);
    expect(replacing).toEqual([0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x5f]);
    expect(replacing.map((v) => protocolId(v).replace)).toEqual([1, 2, 3, 4, 5, 6, 7, 'return call']);
  });

  it('only Type 0 is discarded; only data for the ME or the (U)SIM and device triggering are archived', () => {
    expect(ALL.filter((v) => protocolId(v).action === 'discard')).toEqual([0x40]);
    expect(ALL.filter((v) => protocolId(v).action === 'archive')).toEqual([0x48, 0x7c, 0x7d, 0x7e, 0x7f]);
  });

  it('reserved values are forwarded as a plain SMS ("interpreted as 00000000", §9.2.3.9)', () => {
    const reserved = ALL.filter((v) => /reserved \(bits/.test(protocolId(v).name));
    // 01 001001-011101 (21), 01 100000-111011 (28), and all 64 of 10xxxxxx.
    expect(reserved).toHaveLength(21 + 28 + 64);
    for (const v of reserved) expect(protocolId(v).action).toBe('forward');
  });
});
