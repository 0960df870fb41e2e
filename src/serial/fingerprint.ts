/**
 * PURE: which row of a USB fingerprints table a device matches: exact vendor + product first, then a vendor-only
 * row. Ids are hex, compared in any case.
 */
export function matchFingerprint<R extends { vendorId: string; productId?: string | undefined }>(
  info: { vendorId?: string | undefined; productId?: string | undefined },
  rows: readonly R[],
): R | undefined {
  const vid = info.vendorId?.toLowerCase();
  const pid = info.productId?.toLowerCase();
  if (!vid) return undefined;
  const sameVendor = rows.filter((r) => r.vendorId.toLowerCase() === vid);
  return (
    sameVendor.find((r) => r.productId !== undefined && r.productId.toLowerCase() === pid) ??
    sameVendor.find((r) => r.productId === undefined)
  );
}
