// One module per check, not the package's index (which loads all of its ~100 validators at start).
import creditCard from 'validator/lib/isCreditCard.js';
import email from 'validator/lib/isEmail.js';
import iban from 'validator/lib/isIBAN.js';
import identityCard from 'validator/lib/isIdentityCard.js';
import mobilePhone from 'validator/lib/isMobilePhone.js';
import taxId from 'validator/lib/isTaxID.js';
import type { NATIONAL_IDS, PII_ENTITIES } from '../schemas.js';
import { type Finding, findingGuard, scan, type TextGuard } from './types.js';

/*
 * Personal data: each candidate is found by a fixed pattern (linear: bounded repetitions, no nested
 * quantifiers) and kept only when its checksum or format holds, so that a Luhn-invalid number or a
 * mistyped IBAN is not redacted.
 */

/**
 * The check a validator module exports as `default`: loaders hand a CommonJS module's default import over
 * either as that function or as the exports object holding it (Node's for isIBAN, whose `module.exports`
 * is not the function).
 */
function check<F extends (...args: never[]) => boolean>(mod: { default: F }): F {
  return typeof mod === 'function' ? (mod as unknown as F) : mod.default;
}

const isCreditCard = check(creditCard);
const isEmail = check(email);
const isIBAN = check(iban);
const isIdentityCard = check(identityCard);
const isMobilePhone = check(mobilePhone);
const isTaxID = check(taxId);

type Entity = (typeof PII_ENTITIES)[number];
type NationalId = (typeof NATIONAL_IDS)[number];

const strip = (s: string) => s.replace(/[\s().-]/g, '');

/** France's NIR: 13 digits then a key of 97 - (number mod 97); Corsica's 2A/2B count as 19/18. */
function frNir(s: string): boolean {
  const digits = strip(s).toUpperCase().replace('2A', '19').replace('2B', '18');
  if (!/^\d{15}$/.test(digits)) return false;
  const key = 97 - Number(BigInt(digits.slice(0, 13)) % 97n);
  return key === Number(digits.slice(13));
}

/** The US SSN's rules: no area 000, 666 or 9xx, no group 00, no serial 0000. */
function usSsn(s: string): boolean {
  const [area, group, serial] = s.split('-') as [string, string, string];
  return area !== '000' && area !== '666' && !area.startsWith('9') && group !== '00' && serial !== '0000';
}

const NATIONAL: Record<NationalId, { re: RegExp; valid: (m: string) => boolean }> = {
  us_ssn: { re: /\b\d{3}-\d{2}-\d{4}\b/g, valid: usSsn },
  uk_nino: {
    re: /\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b/g,
    valid: (m) => !/^(BG|GB|NK|KN|TN|NT|ZZ)/.test(m),
  },
  es_dni: { re: /\b\d{8}-?[A-Z]\b/g, valid: (m) => isTaxID(m.replace('-', ''), 'es-ES') },
  it_cf: {
    re: /\b[A-Z]{6}\d{2}[A-Z]\d{2}[A-Z]\d{3}[A-Z]\b/g,
    valid: (m) => isTaxID(m, 'it-IT'),
  },
  de_tax_id: { re: /\b\d{11}\b/g, valid: (m) => isTaxID(m, 'de-DE') },
  fr_nir: { re: /\b[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}\b/g, valid: frNir },
  in_aadhaar: { re: /\b[2-9]\d{3} ?\d{4} ?\d{4}\b/g, valid: (m) => isIdentityCard(strip(m), 'IN') },
};

const EMAIL = /[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b/g;
const CARD = /\b\d(?:[ -]?\d){11,18}\b/g;
const IBAN = /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b/g;
const PHONE = /(?<![\w+])\+?\(?\d[\d ().-]{6,20}\d(?!\w)/g;

function phone(m: string): boolean {
  const digits = strip(m).replace(/^\+/, '');
  if (digits.length < 8 || digits.length > 15 || !/^\d+$/.test(digits)) return false;
  return isMobilePhone(m.startsWith('+') ? `+${digits}` : digits, 'any');
}

/** The finders of the configured entities, most specific first (a card is not also a phone number). */
function finders(entities: readonly Entity[], ids: readonly NationalId[]): ((text: string) => Finding[])[] {
  const out: ((text: string) => Finding[])[] = [];
  if (entities.includes('email')) out.push((t) => scan(t, EMAIL, 'EMAIL', (m) => isEmail(m)));
  if (entities.includes('iban')) out.push((t) => scan(t, IBAN, 'IBAN', (m) => isIBAN(strip(m))));
  if (entities.includes('card')) out.push((t) => scan(t, CARD, 'CARD', (m) => isCreditCard(strip(m))));
  if (entities.includes('national_id')) {
    for (const id of ids) {
      const { re, valid } = NATIONAL[id];
      out.push((t) => scan(t, re, 'NATIONAL_ID', valid));
    }
  }
  if (entities.includes('phone')) out.push((t) => scan(t, PHONE, 'PHONE', phone));
  return out;
}

const overlaps = (a: Finding, list: Finding[]) => list.some((b) => a.start < b.end && b.start < a.end);

export function piiGuard(config: { entities?: Entity[]; national_ids?: NationalId[] }): TextGuard {
  const all = finders(
    config.entities ?? ['email', 'phone', 'card', 'iban', 'national_id'],
    config.national_ids ?? (Object.keys(NATIONAL) as NationalId[]),
  );
  return findingGuard((text) => {
    const found: Finding[] = [];
    // Quick exit: every entity has a digit or an @.
    if (!/[\d@]/.test(text)) return found;
    for (const find of all) for (const f of find(text)) if (!overlaps(f, found)) found.push(f);
    return found;
  });
}
