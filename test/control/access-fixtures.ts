/**
 * Access settings for tests that exercise the dispatcher itself, not access control: a peer that is this process's
 * own uid (which may operate), and a policy with no operator group.
 */
import type { AccessPolicy, PeerState } from '../../src/control/server/access.js';

export const OWN_PEER: PeerState = {
  ok: true,
  peer: { pid: process.pid, uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0, groups: [] },
};
export const OPEN_ACCESS: AccessPolicy = {
  daemonUid: process.getuid?.() ?? 0,
  operateGid: undefined,
  operateGroup: 'pulsa-bridge-ops',
};
