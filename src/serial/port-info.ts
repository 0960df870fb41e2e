/** What `ports` knows of one serial port (a type only): from udev or sysfs, plus its by-id link and fingerprint. */
export interface PortInfo {
  path: string;
  byIdPath?: string;
  vendorId?: string;
  productId?: string;
  manufacturer?: string;
  product?: string;
  serialNumber?: string;
  /** USB interface number, when known: multi-port modems expose several ttys per device. */
  interfaceNumber?: string;
  /** The fingerprint that matched, if any. */
  looksLike?: { profile: string; description: string };
}
