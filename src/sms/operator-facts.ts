/**
 * PURE: pulls the three facts the server matches an order on out of an operator SMS: the credit amount, the
 * sender's phone number and the serial (after `SN:`). Test transfers match their confirmation with it; the demo shows
 * what the server would see. Wording differs by operator and changes over time, so this is tolerant: any field it
 * cannot find is undefined. The receive path never depends on it (it forwards text verbatim).
 */
export interface OperatorSmsFacts {
  /** Amount in whole rupiah. */
  amount: number | undefined;
  /** Sender's number normalised to 62…, as the operator printed it. */
  senderNumber: string | undefined;
  serial: string | undefined;
}

export function parseOperatorSms(text: string): OperatorSmsFacts {
  // 'Rp 5000', 'Rp7000', 'Rp10.000', 'Rp. 25,000', 'Rp 1.500.000'
  const amountMatch = /Rp\.?\s?(\d{1,3}(?:[.,]\d{3})+|\d+)(?![\d.,]*\d)/i.exec(text);
  const amount = amountMatch ? Number(amountMatch[1]!.replace(/[.,]/g, '')) : undefined;
  const numberMatch = /(?<!\d)(?:\+?62|0)8\d{7,12}(?!\d)/.exec(text);
  let senderNumber: string | undefined;
  if (numberMatch) {
    const digits = numberMatch[0].replace(/^\+/, '');
    senderNumber = digits.startsWith('0') ? `62${digits.slice(1)}` : digits;
  }
  const serialMatch = /\bSN\s*[:.]?\s*([A-Za-z0-9][A-Za-z0-9-]*)/.exec(text);
  return { amount: Number.isFinite(amount) ? amount : undefined, senderNumber, serial: serialMatch?.[1] };
}
