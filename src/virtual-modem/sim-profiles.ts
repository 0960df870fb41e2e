/**
 * How each simulated modem family behaves on the wire, as data: boot banners, the error a family gives for an unknown
 * command, where +CUSD goes relative to OK, the CNMI ranges it advertises, its noise URCs and default identity.
 * Each quirk names the device it imitates and why (see /work/shared/reference/field-notes.md).
 *
 * Contract (PURE): data and small formatting functions only.
 */

export type SimProfileId = 'generic' | 'simcom' | 'huawei';
export type SimState = 'ready' | 'pin' | 'puk' | 'absent';

/** What a simulated device answers about itself (the bridge's view of a modem is ModemIdentity, in modem/modem.ts). */
export interface SimulatedIdentity {
  manufacturer: string;
  model: string;
  revision: string;
  imei: string;
  imsi: string;
  iccid: string;
  /** Own number for AT+CNUM ('+62…'); empty string = the SIM does not know it (CNUM answers OK only). */
  ownNumber: string;
  operatorName: string;
  /** MCC+MNC, e.g. '51010'. */
  operatorNumeric: string;
  /** AT+CSQ <rssi> 0-31 (99 unknown) and <ber>. */
  csq: { rssi: number; ber: number };
  /** +CREG <stat>: 0 not registered, 1 home, 2 searching, 3 denied, 5 roaming. */
  creg: number;
  /** Service centre address (AT+CSCA?). */
  smsc: string;
}

export interface SimProfile {
  id: SimProfileId;
  identity: SimulatedIdentity;
  /** Lines emitted after power-up, in order, `bootStepMs` apart. */
  bootBanners(sim: SimState): string[];
  /** Lines emitted after the PIN is entered (the rest of the boot banners). */
  afterPinBanners: string[];
  /** SIM800: SMS commands answer ERROR until this banner has been sent. */
  smsReadyBanner?: string;
  /** Final result for a command the family does not know. */
  unknownCommand: string;
  /** SIM800 and Huawei sticks send +CUSD before the OK of AT+CUSD (field note); 27.007 puts it after. */
  cusdBeforeOk: boolean;
  /** Huawei: USSD strings travel as packed GSM 7-bit hex in both directions. */
  ussdPackedHex: boolean;
  /** Allowed values of <mode>,<mt>,<bm>,<ds>,<bfr>, and how AT+CNMI=? prints them. */
  cnmiAllowed: readonly (readonly number[])[];
  cnmiStyle: 'ranges' | 'lists';
  /** URC sent when an incoming SMS finds the storage full (Huawei: ^SMMEMFULL). */
  storageFullUrc?: string;
  /** Noise URCs emitted at random moments (Huawei sticks, until AT^CURC=0). */
  noiseUrcs: readonly string[];
  /** +COPS? carries <AcT> (3G modems) or not (SIM800, 2G only). */
  copsWithAct: boolean;
  /** AT+CCID answer line. */
  ccidLine(iccid: string): string;
  /** Vendor-specific commands this family understands (table keys in command-table.ts and sim-card.ts). */
  extras: readonly ('huawei-curc' | 'huawei-iccid' | 'huawei-cpin' | 'simcom-spic' | 'cpinr')[];
}

const BASE_IDENTITY: SimulatedIdentity = {
  manufacturer: 'Virtual',
  model: 'VM-3GPP',
  revision: '1.0.0-sim',
  imei: '356938035643809',
  imsi: '510101234567890',
  iccid: '89621012345678901234',
  ownNumber: '+6281234567890',
  operatorName: 'TELKOMSEL',
  operatorNumeric: '51010',
  csq: { rssi: 20, ber: 99 },
  creg: 1,
  smsc: '+6281100000',
};

const GENERIC_CNMI = [
  [0, 1, 2],
  [0, 1, 2, 3],
  [0, 2],
  [0, 1, 2],
  [0, 1],
] as const;

export const SIM_PROFILES: Readonly<Record<SimProfileId, SimProfile>> = {
  generic: {
    id: 'generic',
    identity: BASE_IDENTITY,
    bootBanners: () => [],
    afterPinBanners: [],
    unknownCommand: 'ERROR',
    cusdBeforeOk: false,
    ussdPackedHex: false,
    cnmiAllowed: GENERIC_CNMI,
    cnmiStyle: 'ranges',
    noiseUrcs: [],
    copsWithAct: true,
    ccidLine: (iccid) => `+CCID: ${iccid}`,
    // 27.007 AT+CPINR: PIN tries left.
    extras: ['cpinr'],
  },
  simcom: {
    id: 'simcom',
    identity: {
      ...BASE_IDENTITY,
      manufacturer: 'SIMCOM_Ltd',
      model: 'SIMCOM_SIM800L',
      revision: 'Revision:1418B05SIM800L24',
    },
    // SIM800: power-up banners; with a locked SIM it stops at +CPIN: SIM PIN until the PIN is entered.
    bootBanners: (sim) =>
      sim === 'ready'
        ? ['RDY', '+CFUN: 1', '+CPIN: READY', 'Call Ready', 'SMS Ready']
        : [
            'RDY',
            '+CFUN: 1',
            sim === 'absent' ? '+CPIN: NOT INSERTED' : sim === 'puk' ? '+CPIN: SIM PUK' : '+CPIN: SIM PIN',
          ],
    afterPinBanners: ['+CPIN: READY', 'Call Ready', 'SMS Ready'],
    smsReadyBanner: 'SMS Ready',
    unknownCommand: 'ERROR',
    cusdBeforeOk: true,
    ussdPackedHex: false,
    // SIM800 advertises ds (0,1) only: AT+CNMI=2,1,0,2 fails (field note).
    cnmiAllowed: [
      [0, 1, 2, 3],
      [0, 1, 2, 3],
      [0, 2],
      [0, 1],
      [0, 1],
    ],
    cnmiStyle: 'ranges',
    noiseUrcs: [],
    copsWithAct: false,
    ccidLine: (iccid) => iccid,
    // SIM800: AT+SPIC tells the PIN/PUK tries left (no AT+CPINR on this firmware).
    extras: ['simcom-spic'],
  },
  huawei: {
    id: 'huawei',
    identity: { ...BASE_IDENTITY, manufacturer: 'huawei', model: 'E173', revision: '11.126.85.00.209' },
    bootBanners: (sim) => [`^SIMST:${sim === 'absent' ? 255 : 1}`, '^SRVST:2'],
    afterPinBanners: ['^SIMST:1'],
    unknownCommand: 'COMMAND NOT SUPPORT',
    cusdBeforeOk: true,
    ussdPackedHex: true,
    cnmiAllowed: GENERIC_CNMI,
    // E173 prints every allowed value: +CNMI: (0,1,2),(0,1,2,3),(0,2),(0,1,2),(0,1)
    cnmiStyle: 'lists',
    storageFullUrc: '^SMMEMFULL: "SM"',
    noiseUrcs: [
      '^RSSI:17',
      '^HCSQ:"WCDMA",40,35,45',
      '^MODE:5,4',
      '^DSFLOWRPT:00000010,00000000,00000000,0000000000000000,0000000000000000,0000BB80,0001F400',
      '^SRVST:2',
      '^SIMST:1',
      '^NWTIME:26/01/08,12:00:00+28,00',
      '^BOOT:20952235,0,0,0,72',
    ],
    copsWithAct: true,
    ccidLine: (iccid) => `+CCID: ${iccid}`,
    // E173: AT^CPIN? tells the PIN/PUK tries left (no AT+CPINR).
    extras: ['huawei-curc', 'huawei-iccid', 'huawei-cpin'],
  },
};

/** Formats one CNMI parameter's allowed values: `(0-2)` / `(0,2)` (ranges) or `(0,1,2)` (lists). */
export function formatAllowed(values: readonly number[], style: 'ranges' | 'lists'): string {
  const sorted = [...values].sort((a, b) => a - b);
  const first = sorted[0];
  const last = sorted[sorted.length - 1];
  const contiguous = first !== undefined && last !== undefined && last - first === sorted.length - 1;
  if (style === 'ranges' && contiguous && sorted.length > 2) return `(${first}-${last})`;
  return `(${sorted.join(',')})`;
}
