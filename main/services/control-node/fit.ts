import { gzipSync } from 'node:zlib';
import { AppError } from '../../../shared/contract/errors';
import { BEGIN_LINE, BEGIN_MARKER, END_LINE, END_MARKER, USER_DATA_LIMIT } from './markers';

export type Tier = 1 | 2 | 3;

export interface Fitted {
  tier: Tier;
  contents: string;
  chars: number;
  /** The size as written (tier 1), so a job can say how much fitting saved. */
  originalChars: number;
}

/** Skytap counts characters; the payload is ASCII, but count code points to be exact anyway. */
export function charCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

const HEREDOC_START = /<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1/;

/**
 * Tier 2: drops whole-line comments, keeping the shebang, the two marker lines and every heredoc
 * body byte for byte (a heredoc's `#` lines are data: the policy's header, a config's comments).
 */
export function stripComments(script: string): string {
  const lines = script.split('\n');
  const out: string[] = [];
  let heredocEnd: string | null = null;
  let stripTabs = false;
  lines.forEach((line, i) => {
    if (heredocEnd !== null) {
      out.push(line);
      const probe = stripTabs ? line.replace(/^\t+/, '') : line;
      if (probe === heredocEnd) heredocEnd = null;
      return;
    }
    const isComment = /^\s*#/.test(line);
    const keep = !isComment || (i === 0 && line.startsWith('#!')) || line === BEGIN_LINE || line === END_LINE;
    if (keep) out.push(line);
    const m = isComment ? null : HEREDOC_START.exec(line);
    if (m) {
      heredocEnd = m[2]!;
      stripTabs = line.slice(m.index).startsWith('<<-');
    }
  });
  return out.join('\n');
}

const GZ_EOF = 'DASHBOARD_GZ_EOF';

/**
 * Tier 3: gzip + base64 between the same markers, with a decoder that writes the script to a
 * temporary file and runs it. base64 -d and gunzip exist in coreutils and BusyBox alike.
 */
export function compressPayload(script: string): string {
  const b64 = gzipSync(Buffer.from(script, 'utf8'), { level: 9 }).toString('base64');
  const wrapped = b64.match(/.{1,76}/g)?.join('\n') ?? '';
  return [
    '#!/bin/sh',
    BEGIN_LINE,
    't=$(mktemp) || exit 1',
    `base64 -d <<'${GZ_EOF}' | gunzip -c > "$t" || { rm -f "$t"; exit 1; }`,
    wrapped,
    GZ_EOF,
    'sh "$t"; s=$?; rm -f "$t"; exit $s',
    END_LINE,
    '',
  ].join('\n');
}

/**
 * Fits a bootstrap into Skytap's user_data limit, changing as little as it can: as written, else
 * without comment lines, else compressed. Refuses naming both sizes when even tier 3 is too big.
 */
export function fitUserData(script: string, limit = USER_DATA_LIMIT): Fitted {
  if (!script.includes(BEGIN_MARKER) || !script.includes(END_MARKER)) {
    throw new AppError('internal', 'the bootstrap lacks its marker lines; the template runner would never run it');
  }
  const originalChars = charCount(script);
  if (originalChars <= limit) return { tier: 1, contents: script, chars: originalChars, originalChars };
  const stripped = stripComments(script);
  const strippedChars = charCount(stripped);
  if (strippedChars <= limit) return { tier: 2, contents: stripped, chars: strippedChars, originalChars };
  const packed = compressPayload(script);
  const packedChars = charCount(packed);
  if (packedChars <= limit) return { tier: 3, contents: packed, chars: packedChars, originalChars };
  throw new AppError(
    'unsupported',
    `the control-node bootstrap is ${originalChars} characters as written and ${packedChars} compressed; ` +
      `Skytap's user_data holds at most ${limit}. The policy grows with every VM: split the POV or remove VMs it does not need`,
    { originalChars, strippedChars, packedChars, limit },
  );
}
