/**
 * What an error prints: the daemon's errors (ControlError in the daemon's own code paths, RemoteError as the client
 * receives them) show their hint like a BridgeError does.
 */
import { describe, expect, it } from 'vitest';
import { formatError } from '../../src/cli/lifecycle.js';
import { RemoteError } from '../../src/control/client/client.js';
import { ControlError } from '../../src/control/protocol.js';
import { BridgeError } from '../../src/errors.js';

describe('formatError', () => {
  it('prints the hint of a ControlError and a RemoteError like a BridgeError', () => {
    const bridge = formatError(new BridgeError('AT_ERROR', 'no USSD session is open', { hint: 'open one first' }));
    expect(bridge).toBe('error: no USSD session is open\nhint: open one first\n');
    expect(formatError(new ControlError('not_found', 'no USSD session is open', 'open one first'))).toBe(bridge);
    expect(formatError(new RemoteError('not_found', 'no USSD session is open', 'open one first', { x: 1 }))).toBe(
      bridge,
    );
    expect(formatError(new RemoteError('busy', 'busy, session opened by x'))).toBe(
      'error: busy, session opened by x\n',
    );
  });
});
