import { describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { jsonErrorWithoutText } from '../../src/config-file.js';
import { loadConfig, maskSecrets, parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { tempDir } from '../support/tmp.js';
import { maskSecretEchoes, maskUrl, maskUssdAnswer, redactAtLine } from '../../src/redact.js';
import { maskSecret } from '../../src/reseller/client.js';

describe('redactAtLine: every segment that carries a PIN, PUK or password', () => {
  it.each([
    ['AT+CPIN="4321"', 'AT+CPIN=[redacted]'],
    ['AT+CSQ;+CPIN="4321"', 'AT+CSQ;+CPIN=[redacted]'],
    ['AT+CSQ;+CPIN=4321;+CREG?', 'AT+CSQ;+CPIN=[redacted];+CREG?'],
    ['at+csq;+cpin = "4321"', 'at+csq;+cpin =[redacted]'],
    ['AT+CLCK="SC",1,"4321"', 'AT+CLCK=[redacted]'],
    ['AT+CPWD="SC","1234","43;21"', 'AT+CPWD=[redacted]'],
    ['AT+CPIN2="9999"', 'AT+CPIN2=[redacted]'],
    ['AT+CSIM=18,"002000010831323334FFFFFFFF"', 'AT+CSIM=[redacted]'],
    ['ATD**04*1234*4321*4321#;', 'ATD**04*[redacted];'],
    ['ATD*T*04*1234*4321*4321#;', 'ATD*T*04*[redacted];'],
    ['ATDT**04*1234*4321*4321#;', 'ATDT**04*[redacted];'],
    ['ATD**05*12345678*1234*1234#', 'ATD**05*[redacted]'],
    ['AT+CSQ;+CREG?', 'AT+CSQ;+CREG?'],
    ['AT+CPIN?', 'AT+CPIN?'],
    // Spaces a modem ignores (V.250) do not hide a secret from the redaction.
    ['AT+ CPIN=4321', 'AT+CPIN=[redacted]'],
    ['AT + CLCK="SC",1,"4321"', 'AT+CLCK=[redacted]'],
    ['ATD * * 04*4321*1111*1111#;', 'ATD**04*[redacted];'],
    ['AT+C PIN="4321"', 'AT+CPIN=[redacted]'],
    ['AT+CSQ ;+ CPWD = "SC" ,"4321","8765"', 'AT+CSQ;+CPWD=[redacted]'],
  ])('%s -> %s', (line, want) => expect(redactAtLine(line)).toBe(want));

  it('leaves no digit of the PIN anywhere in the line', () => {
    for (const line of [
      'AT+CSQ;+CPIN="4321"',
      'AT+CSQ ; +CLCK = "SC" , 1 , "4321"',
      'AT+CREG?;+CPWD="SC","4321","8765"',
    ])
      expect(redactAtLine(line)).not.toMatch(/4321|8765/);
  });
});

describe('USSD answers in logs: a menu choice shown, anything longer masked', () => {
  it.each([
    ['1', '1'],
    ['99', '99'],
    ['654321', '[6 characters]'],
    ['OKAB12', '[6 characters]'],
  ])('%s -> %s', (text, want) => expect(maskUssdAnswer(text)).toBe(want));

  it('in an AT line: the answer masked, a dialled code kept', () => {
    expect(redactAtLine('AT+CUSD=1,"654321",15')).toBe('AT+CUSD=1,"[6 characters]",15');
    expect(redactAtLine('AT+CUSD=1,"1",15')).toBe('AT+CUSD=1,"1",15');
    expect(redactAtLine('AT+CUSD=1,"*858*081200000001*5000#",15')).toBe('AT+CUSD=1,"*858*081200000001*5000#",15');
  });
});

describe('maskUrl: user info and every query value', () => {
  it.each([
    ['https://user:pass@api.example.com/api/v1/hook', 'https://********:********@api.example.com/api/v1/hook'],
    ['https://api.example.com/hook?token=s3cret&x=1', 'https://api.example.com/hook?token=********&x=********'],
    [
      'https://u:p@api.example.com/hook?token=s3cret#frag',
      'https://********:********@api.example.com/hook?token=********#********',
    ],
    ['https://api.example.com/api/v1', 'https://api.example.com/api/v1'],
    ['not a url://u:p@h?k=v', 'not a url://********@h?k=********'],
  ])('%s', (url, want) => expect(maskUrl(url)).toBe(want));
});

describe('config: no secret in what is shown', () => {
  it('config check masks the query of the webhook URL, not only the password', () => {
    const cfg = parseConfig({
      webhook: { url: 'https://u:pw@hooks.example.com/api/v1/convert-pulsa/webhook/sms-gateway?token=s3cret' },
      spool: { dir: '/tmp/x' },
      modems: [{ name: 'm', port: '/dev/x', senders: ['858'] }],
    });
    const shown = JSON.stringify(maskSecrets(cfg));
    expect(shown).not.toMatch(/s3cret|:pw@/);
    expect(shown).toContain('token=********');
  });

  it('a config that is not JSON is reported without the text around the error', async () => {
    const body = '{"webhook": {"hmacSecret": s3cr3t-value}}';
    let message = '';
    try {
      JSON.parse(body);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/s3cr3t/); // what V8 says: the text is quoted
    const shown = jsonErrorWithoutText(message, body);
    expect(shown).not.toMatch(/s3cr|hmac/);
    expect(shown).toMatch(/^Unexpected token/);
    const { dir, cleanup } = await tempDir('cfg-json');
    try {
      const file = path.join(dir, 'config.json');
      await writeFile(file, body);
      const err = await loadConfig(file).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems.join('\n')).toBe('not valid JSON (Unexpected token)');
    } finally {
      await cleanup();
    }
    expect(
      jsonErrorWithoutText(
        "Expected ',' or '}' after property value in JSON at position 20",
        '{"a":1,\n"pin": "12" "x"}',
      ),
    ).toBe("Expected ',' or '}' after property value at line 2, column 13");
  });
});

describe('reseller errors: any echo of the key', () => {
  const key = 'sk_live_9f8e7d6c5b4a39281706';
  it.each([
    [`invalid key ${key}`],
    [`invalid key ${key.toUpperCase()}`],
    [`{"error":"key sk_live_9f8e7d6c... unknown"}`],
    [`bad key ...6c5b4a3928...`],
    [`key=${encodeURIComponent(key)}`],
    [`auth ${Buffer.from(key).toString('base64')}`],
  ])('%s', (text) => {
    const masked = maskSecret(text, key);
    expect(masked).toContain('***');
    for (let i = 0; i + 6 <= key.length; i++)
      expect(masked.toLowerCase()).not.toContain(key.slice(i, i + 6).toLowerCase());
  });
  it('leaves text that shares nothing with the key alone', () => {
    expect(maskSecretEchoes('{"error":"rate limited, retry later"}', key)).toBe(
      '{"error":"rate limited, retry later"}',
    );
  });
});
