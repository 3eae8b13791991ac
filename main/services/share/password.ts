import { randomInt } from 'node:crypto';

/**
 * Lower-case letters and digits a customer can read aloud and type without asking: no 0/o, 1/l/i,
 * and no upper case (spelling "capital K" over the phone is where handovers go wrong).
 */
export const PASSWORD_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
export const PASSWORD_GROUPS = 5;
export const GROUP_LENGTH = 4;

/**
 * A share-link password: 20 characters from PASSWORD_ALPHABET (~99 bits, crypto.randomInt), in
 * groups of four joined by hyphens so it can be read out in chunks (24 characters in all).
 */
export function generatePassword(): string {
  const groups: string[] = [];
  for (let g = 0; g < PASSWORD_GROUPS; g++) {
    let s = '';
    for (let i = 0; i < GROUP_LENGTH; i++) s += PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)];
    groups.push(s);
  }
  return groups.join('-');
}

/** The keychain account holding one share link's password: keyed by POV and portal. */
export function passwordAccount(povId: string, shareId: string): string {
  return `share-password:${povId}:${shareId}`;
}
