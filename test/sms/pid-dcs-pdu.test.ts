/**
 * SMS-DELIVER PDUs written by hand from TS 23.040 §9.2.2.1 with the TP-PID and TP-DCS values whose handling differs:
 * the decoder reports them, src/virtual-modem/pdu-builder.ts (the independent encoder) writes the same octets, and the receive
 * path's disposal follows from them (discard, archive, forward).
 */
import { parse } from 'node-pdu';
import { describe, expect, it } from 'vitest';
import { disposalOf } from '../../src/sms/disposal.js';
import { buildDeliverPdus } from '../../src/virtual-modem/pdu-builder.js';
import { decodeDeliver } from '../../src/sms/pdu.js';

// 2024-01-08 10:15:00 +07:00 (zone 28 quarters: swapped BCD 82).
const SCTS = '42108001510082';
const TS = new Date('2024-01-08T03:15:00Z');
// No SMSC | DELIVER, no more messages (04) | OA 858: 03 semi-octets, TOA 81, 85 8F swapped -> 58 F8.
const HEAD = '00' + '04' + '038158F8';

function decoded(pdu: string) {
  const r = decodeDeliver({ index: 1, stat: 0, length: pdu.length / 2 - 1, pdu });
  if (!r.ok) throw new Error(r.reason);
  return r;
}

describe('hand-built PDUs by TP-PID and TP-DCS', () => {
  it.each([
    // label, PID, DCS, UDL + UD (hand packed), text, what the receive path does
    ['Short Message Type 0, empty (a "silent SMS")', '40', '00', '00', '', 'discard'],
    ['Short Message Type 0 with a text', '40', '00', '02' + 'C834', 'Hi', 'discard'],
    ['Replace Short Message Type 1', '41', '00', '02' + 'C834', 'Hi', 'forward'],
    ['Return Call Message', '5F', '00', '02' + 'C834', 'Hi', 'forward'],
    ['telematic interworking: Internet Electronic Mail', '32', '00', '02' + 'C834', 'Hi', 'forward'],
    ['(U)SIM Data download, class 2 8-bit (the OTA form)', '7F', 'F6', '02' + '0270', '0270', 'archive'],
    ['ME Data download', '7D', 'F5', '01' + 'AA', 'AA', 'archive'],
    ['ME De-personalization', '7E', '04', '01' + 'AA', 'AA', 'archive'],
    ['ANSI-136 R-DATA', '7C', '04', '01' + '01', '01', 'archive'],
    ['Device Triggering', '48', '04', '01' + '01', '01', 'archive'],
    ['reserved PID 0x80 is read as 0x00', '80', '00', '02' + 'C834', 'Hi', 'forward'],
    ['SC specific PID 0xC1', 'C1', '00', '02' + 'C834', 'Hi', 'forward'],
  ])('%s', (_label, pid, dcs, ud, text, action) => {
    const { sms } = decoded(HEAD + pid + dcs + SCTS + ud);
    expect(sms.protocolId).toBe(parseInt(pid, 16));
    expect(sms.text).toBe(text);
    expect(disposalOf(sms)?.action ?? 'forward').toBe(action);
  });

  it.each([
    // label, DCS, UDL + UD, text, message class, waiting, what the receive path does
    ['class 0 (flash) GSM 7-bit, group 00x1', '10', '02' + 'C834', 'Hi', 0, undefined, 'forward'],
    ['class 1 UCS2 marked for automatic deletion, group 01x1', '59', '04' + '00480069', 'Hi', 1, undefined, 'forward'],
    ['class 0 GSM 7-bit, group 1111', 'F0', '02' + 'C834', 'Hi', 0, undefined, 'forward'],
    ['class 3 8-bit, group 1111 (hex of the data)', 'F7', '02' + 'C834', 'C834', 3, undefined, 'forward'],
    ['reserved group 1010: GSM 7-bit', 'A5', '02' + 'C834', 'Hi', undefined, undefined, 'forward'],
    ['reserved alphabet 11 of group 0000: GSM 7-bit', '0C', '02' + 'C834', 'Hi', undefined, undefined, 'forward'],
    // Message waiting: 1100 discard (GSM 7-bit), 1101 store (GSM 7-bit), 1110 store (UCS2); bit 3 sense, bits 1-0 type.
    [
      'voicemail waiting, discard group 1100',
      'C8',
      '02' + 'C834',
      'Hi',
      undefined,
      { kind: 'voicemail', active: true, store: false },
      'archive',
    ],
    [
      'voicemail cleared, discard group 1100',
      'C0',
      '00',
      '',
      undefined,
      { kind: 'voicemail', active: false, store: false },
      'archive',
    ],
    [
      'e-mail waiting, store group 1101',
      'DA',
      '02' + 'C834',
      'Hi',
      undefined,
      { kind: 'email', active: true, store: true },
      'forward',
    ],
    [
      'fax waiting, store group 1110 (UCS2)',
      'E9',
      '04' + '00480069',
      'Hi',
      undefined,
      { kind: 'fax', active: true, store: true },
      'forward',
    ],
  ] as const)('DCS %s: %s', (_label, dcs, ud, text, messageClass, waiting, action) => {
    const { sms } = decoded(HEAD + '00' + dcs + SCTS + ud);
    expect(sms.dataCoding).toBe(parseInt(dcs, 16));
    expect(sms.text).toBe(text);
    expect(sms.messageClass).toBe(messageClass);
    expect(sms.waiting).toEqual(waiting);
    expect(disposalOf(sms)?.action ?? 'forward').toBe(action);
  });

  it.each([
    // UDHI set (first octet 44); UDL 8 septets: UDH 05 octets = 6 septets (2 fill bits) + 'Hi' packed after them:
    // (48<<2)&FF = 20, 48>>6 | (69<<1)&FF = D3. IE 01 (Special SMS Message Indication), length 02: type, count.
    [
      'voicemail, 3 waiting, discard (bit 7 clear)',
      '0401020003',
      { kind: 'voicemail', active: true, store: false },
      'archive',
    ],
    [
      'voicemail, 3 waiting, store (bit 7 set)',
      '0401028003',
      { kind: 'voicemail', active: true, store: true },
      'forward',
    ],
    ['e-mail, none waiting any more, discard', '0401020200', { kind: 'email', active: false, store: false }, 'archive'],
  ] as const)('UDH Special SMS Message Indication (TS 23.040 §9.2.3.24.2): %s', (_label, udh, waiting, action) => {
    const { sms } = decoded('00' + '44' + '038158F8' + '00' + '00' + SCTS + '08' + udh + '20D3');
    expect(sms.text).toBe('Hi');
    expect(sms.waiting).toEqual(waiting);
    expect(disposalOf(sms)?.action ?? 'forward').toBe(action);
  });

  it('compressed text (DCS 0x20, 0x64) is refused by name, never shown as garbage', () => {
    for (const dcs of ['20', '64']) {
      const pdu = HEAD + '00' + dcs + SCTS + '02' + 'C834';
      const r = decodeDeliver({ index: 1, stat: 0, length: pdu.length / 2 - 1, pdu });
      expect(r).toEqual({ ok: false, reason: `DCS 0x${dcs}: compressed text (TS 23.042) is not supported` });
    }
  });

  it('a reserved DCS decodes with a warning naming it', () => {
    const { warnings } = decoded(HEAD + '00' + 'A5' + SCTS + '02C834');
    expect(warnings).toEqual(['DCS 0xA5: reserved coding group, read as GSM 7-bit']);
  });

  it('pdu-builder, the independent encoder, writes the same octets for the PID and DCS of these rows', () => {
    const build = (pid: number, dcs: number, text: string, encoding: 'gsm7' | 'ucs2' = 'gsm7') =>
      buildDeliverPdus({ originator: '858', text, timestamp: TS, tzQuarterHours: 28, pid, dcs, encoding })[0]!.pdu;
    expect(build(0x40, 0x00, '')).toBe(HEAD + '40' + '00' + SCTS + '00');
    expect(build(0x40, 0x00, 'Hi')).toBe(HEAD + '40' + '00' + SCTS + '02C834');
    expect(build(0x41, 0x00, 'Hi')).toBe(HEAD + '41' + '00' + SCTS + '02C834');
    expect(build(0x00, 0xc8, 'Hi')).toBe(HEAD + '00' + 'C8' + SCTS + '02C834');
    expect(build(0x00, 0xe9, 'Hi', 'ucs2')).toBe(HEAD + '00' + 'E9' + SCTS + '0400480069');
  });

  it('node-pdu reads the same TP-PID and message waiting indication from the hand-built octets', () => {
    const n = parse(HEAD + '40' + 'C8' + SCTS + '02C834') as unknown as {
      protocolIdentifier: { getValue(): number };
      dataCodingScheme: { discardMessage: boolean; messageIndication: number; messageIndicationType: number };
    };
    expect(n.protocolIdentifier.getValue()).toBe(0x40);
    const d = n.dataCodingScheme;
    expect([d.discardMessage, d.messageIndication, d.messageIndicationType]).toEqual([true, 1, 0]);
    const waiting = { kind: 'voicemail', active: true, store: false };
    expect(decoded(HEAD + '40' + 'C8' + SCTS + '02C834').sms).toMatchObject({ protocolId: 0x40, waiting });
  });
});
