/**
 * USSD end states: a status 2 that carries the answer is the answer at once; a bare `+CUSD: 2` is a release notice (the
 * reply may follow within the grace time); `+CUSD: 4` is "not supported". isReleaseNotice() tells them apart.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { Modem } from '../../src/modem/modem.js';
import { isReleaseNotice } from '../../src/modem/ussd-session.js';
import { FakeChannel } from './fake-channel.js';

const modemOn = (rows: ConstructorParameters<typeof Object>[0]) => {
  const fake = FakeChannel.fromTable(rows as never);
  return { fake, modem: new Modem({ channel: fake, name: 'm1', logger: silentLogger(), profile: 'generic' }) };
};

describe('USSD end states', () => {
  it.each([
    [{ status: 2, text: 'Initiating Release', raw: '+CUSD: 2,"Initiating Release",15' }, true],
    [{ status: 2, text: 'USSD session ended by the network', raw: '+CUSD: 2' }, true],
    [{ status: 2, text: 'Sisa pulsa Rp.5000', raw: '+CUSD: 2,"Sisa pulsa Rp.5000",15' }, false],
    [{ status: 0, text: 'Release', raw: '+CUSD: 0,"Release",15' }, false],
  ])('%j is a release notice: %s', (reply, expected) => {
    expect(isReleaseNotice(reply)).toBe(expected);
  });

  it('status 2 with the answer in it: the answer at once, no wait', async () => {
    const { modem } = modemOn([
      ['AT+CSCS="IRA"', ['OK']],
      ['AT+CUSD=1,"*100#",15', ['OK', '! +CUSD: 2,"Sisa pulsa Rp.5000",15']],
    ]);
    const started = Date.now();
    const reply = await modem.ussd('*100#');
    expect(reply).toMatchObject({ status: 2, text: 'Sisa pulsa Rp.5000' });
    expect(reply.noReply).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('a bare +CUSD: 2 followed by the reply: the reply is the answer', async () => {
    const { modem } = modemOn([
      ['AT+CSCS="IRA"', ['OK']],
      ['AT+CUSD=1,"*100#",15', ['OK', '! +CUSD: 2', '! +CUSD: 0,"Sisa pulsa Rp.5000",15']],
    ]);
    expect(await modem.ussd('*100#')).toMatchObject({
      status: 0,
      text: 'Sisa pulsa Rp.5000',
      releaseNotice: '+CUSD: 2',
    });
  });

  it('+CUSD: 4: not supported, at once', async () => {
    const { modem } = modemOn([
      ['AT+CSCS="IRA"', ['OK']],
      ['AT+CUSD=1,"*999#",15', ['OK', '! +CUSD: 4']],
    ]);
    expect(await modem.ussd('*999#')).toMatchObject({ status: 4 });
  });
});
