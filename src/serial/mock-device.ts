/**
 * Devices behind the mock binding. The virtual modem registers a device at a path; when a SerialLink opens that path
 * with binding 'mock', the device is attached: it sees every chunk the bridge writes and can send bytes back.
 * serialport's mock has no write hook, so the link wraps the binding's `write` (see serial-link.ts).
 * A device can be unplugged (the open link closes with disconnected=true, and opening fails until it is plugged back).
 */

export interface MockDeviceSide {
  /** Bytes from the modem to the bridge. Ignored (returns false) when no link is attached. */
  emit(data: Buffer | string): boolean;
  /** The device vanishes: the open link closes with disconnected=true. */
  unplug(): void;
}

export interface MockDevice {
  /** Called when a link opens the path; `side` is valid until `onDetach`. */
  onAttach(side: MockDeviceSide): void;
  /** Every chunk the bridge writes. */
  onWrite(chunk: Buffer): void;
  /** The link closed (by the bridge, or by unplug). */
  onDetach(): void;
  /** false while unplugged: open fails with PORT_NOT_FOUND. */
  readonly present: boolean;
}

const devices = new Map<string, MockDevice>();

export function registerMockDevice(path: string, device: MockDevice): () => void {
  devices.set(path, device);
  return () => {
    if (devices.get(path) === device) devices.delete(path);
  };
}

export function getMockDevice(path: string): MockDevice | undefined {
  return devices.get(path);
}
