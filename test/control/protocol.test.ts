import { describe, expect, it } from 'vitest';
import { encodeLine, MAX_LINE_BYTES, OPS, parseRequest } from '../../src/control/protocol.js';

describe('parseRequest', () => {
  it('accepts each op with its fields', () => {
    const lines = [
      { v: 1, id: 1, op: 'hello', client: 'pulsa-bridge 0.1.0' },
      { v: 1, id: 2, op: 'at', modem: 'tsel-1', command: 'AT+CSQ;+CREG?' },
      { v: 1, id: 3, op: 'at', command: 'AT+CMGS=23', body: '0011000B91...', timeoutMs: 60000 },
      { v: 1, id: 'u1', op: 'ussd.open', code: '*888#' },
      { v: 1, id: 'u2', op: 'ussd.reply', text: '1' },
      { v: 1, id: 5, op: 'sms.read', index: 0 },
      { v: 1, id: 6, op: 'subscribe', events: ['urc', 'sms'] },
      { v: 1, id: 7, op: 'balance', modem: 'tsel-1', code: '*888#', replies: ['1'] },
    ];
    for (const l of lines) {
      const r = parseRequest(JSON.stringify(l));
      expect(r, JSON.stringify(l)).toEqual({ ok: true, request: l });
    }
    expect(OPS).toContain('sms.send');
  });

  it.each([
    ['not json', '{"v":1,', null, 'bad_request', /^not JSON/],
    ['an array', '[1,2]', null, 'bad_request', /a request is a JSON object/],
    ['null', 'null', null, 'bad_request', /a request is a JSON object/],
    ['another version', '{"v":2,"id":9,"op":"hello"}', 9, 'version', /protocol version 2 is not spoken here/],
    ['no version', '{"id":9,"op":"hello"}', 9, 'version', /protocol version undefined/],
    ['an unknown op', '{"v":1,"id":"x","op":"reboot"}', 'x', 'bad_request', /unknown op "reboot"/],
    ['an unknown field', '{"v":1,"id":3,"op":"at","command":"AT","forse":true}', 3, 'bad_request', /forse/],
    ['a missing field', '{"v":1,"id":3,"op":"sms.read"}', 3, 'bad_request', /index/],
    ['a negative index', '{"v":1,"id":3,"op":"sms.delete","index":-1}', 3, 'bad_request', /index/],
    ['an empty command', '{"v":1,"id":3,"op":"at","command":""}', 3, 'bad_request', /command/],
    ['no id', '{"v":1,"op":"hello"}', null, 'bad_request', /id/],
    ['a huge id', `{"v":1,"id":"${'x'.repeat(100)}","op":"hello"}`, null, 'bad_request', /id/],
  ])('refuses %s', (_what, line, id, code, message) => {
    const r = parseRequest(line);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.reply).toMatchObject({ v: 1, id, ok: false, error: { code } });
    if (!r.reply.ok) expect(r.reply.error.message).toMatch(message);
  });

  it('refuses a line over the limit without parsing it', () => {
    const line = JSON.stringify({ v: 1, id: 1, op: 'sms.send', to: '858', text: 'x'.repeat(MAX_LINE_BYTES) });
    const r = parseRequest(line);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reply).toMatchObject({ id: null, error: { code: 'too_large' } });
  });

  it('encodes one message per line', () => {
    const line = encodeLine({ v: 1, id: 1, ok: true, result: { text: 'a\nb' } });
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
  });
});
