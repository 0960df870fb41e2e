import { describe, expect, it } from 'vitest';
import { redactCommand } from '../../src/at/channel.js';

describe('redactCommand (the AT channel log lines)', () => {
  it.each([
    ['AT+CPIN="4321"', '4321'],
    ['AT+CSQ;+CPIN="4321"', '4321'],
    ['at+clck="SC",1,"9876"', '9876'],
    ['AT+CPWD="SC","1111","2222"', '2222'],
  ])('%s shows no secret', (command, secret) => {
    const shown = redactCommand(command);
    expect(shown).not.toContain(secret);
    expect(shown).toContain('[redacted]');
  });

  it('leaves a command without secrets as it is', () => {
    expect(redactCommand('AT+CMGR=3')).toBe('AT+CMGR=3');
  });
});
