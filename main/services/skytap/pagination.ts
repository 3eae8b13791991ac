import type { z } from 'zod';
import { AppError } from '../../../shared/contract/errors';
import { shortPageError, unreadableReplyError } from './errors';
import type { SkytapHttp } from './http';

/**
 * Skytap collections are walked by count/offset to the total the Content-Range header reports;
 * a page shorter than promised is an error, never silently dropped items (docs/skytap.md).
 */

export const PAGE_SIZE = 100;

/**
 * Content-Range of a paginated collection: `items <first>-<last>/<total>` (the unit prefix is
 * optional) or `items * /<total>` for an empty range. null when absent; an error when unreadable.
 */
export function parseContentRange(
  value: string | string[] | undefined,
): { first: number; last: number; total: number } | { first: null; last: null; total: number } | null | 'invalid' {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return null;
  const full = /^(?:[a-z]+\s+)?(\d+)-(\d+)\/(\d+)$/i.exec(v);
  if (full) {
    const [first, last, total] = [Number(full[1]), Number(full[2]), Number(full[3])];
    if (last < first) return 'invalid';
    return { first, last, total };
  }
  const empty = /^(?:[a-z]+\s+)?\*\/(\d+)$/i.exec(v);
  if (empty) return { first: null, last: null, total: Number(empty[1]) };
  return 'invalid';
}

/** One page of a collection, checked against its Content-Range. */
export async function fetchPage<T>(
  http: SkytapHttp,
  path: string,
  count: number,
  offset: number,
  schema: z.ZodType<T[]>,
  what?: string,
): Promise<{ items: T[]; total: number; ranged: boolean }> {
  if (!Number.isInteger(count) || count < 1 || count > 1000 || !Number.isInteger(offset) || offset < 0) {
    throw new AppError('invalid_request', `Bad page request: count ${count}, offset ${offset}.`);
  }
  const label = `GET ${path}?count=${count}&offset=${offset}`;
  const r = await http.sendOk('GET', path, { query: { count: String(count), offset: String(offset) }, what });
  const items = http.parse(r.body, schema, label);
  const range = parseContentRange(r.headers['content-range']);
  if (range === 'invalid') {
    throw unreadableReplyError(label, `Content-Range "${String(r.headers['content-range'])}" is not items <first>-<last>/<total>`, {
      isCreate: false,
      retries: 0,
    });
  }
  // No Content-Range: the reply was not truncated (what Skytap's own clients assume).
  if (range === null) return { items, total: offset + items.length, ranged: false };
  if (range.first !== null && range.first !== offset) {
    throw unreadableReplyError(label, `Content-Range starts at ${range.first}, not at the requested offset ${offset}`, {
      isCreate: false,
      retries: 0,
    });
  }
  if (range.first !== null && range.last - range.first + 1 !== items.length) {
    throw shortPageError(label, items.length, range.last - range.first + 1, offset, range.total);
  }
  return { items, total: range.total, ranged: true };
}

/** Walks a collection to the total it reports; a page shorter than promised is an error. */
export async function walkPages<T>(http: SkytapHttp, path: string, schema: z.ZodType<T[]>, what?: string): Promise<T[]> {
  const all: T[] = [];
  let offset = 0;
  let total: number;
  for (let pages = 0; ; pages++) {
    const page = await fetchPage(http, path, PAGE_SIZE, offset, schema, what);
    if (!page.ranged) {
      // No Content-Range: this reply is the rest of the collection, however long.
      all.push(...page.items);
      break;
    }
    total = page.total;
    const expected = Math.max(0, Math.min(PAGE_SIZE, total - offset));
    if (page.items.length < expected) {
      throw shortPageError(`GET ${path}?count=${PAGE_SIZE}&offset=${offset}`, page.items.length, expected, offset, total);
    }
    all.push(...page.items.slice(0, Math.max(expected, 0)));
    offset += expected;
    if (offset >= total || expected === 0) break;
    if (pages > 100_000) throw new AppError('internal', `Walking ${path} did not end after ${pages} pages.`);
  }
  return all;
}
