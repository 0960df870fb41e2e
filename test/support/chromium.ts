// Launches Debian's Chromium (never a downloaded browser) headless with a profile of its own, kept off the network:
// no sync, no component updates, no QUIC. Used by the status page's browser test and its bench.
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export function launchChromium(profile: string): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    env: { ...process.env, HOME: profile },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
