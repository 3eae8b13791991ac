/**
 * The few web-platform globals shared/ uses. Both runtimes have them (Node >= 20 and Chromium), but
 * shared/ is type-checked with neither the DOM's nor Node's types (tsconfig.shared.json), so that
 * `document`, `window`, `Buffer` or `process` fail tsc here. Declare only what both provide.
 */

/** WHATWG URL: the parts shared/url-policy.ts reads. */
declare class URL {
  constructor(url: string, base?: string | URL);
  readonly href: string;
  readonly protocol: string;
  readonly hostname: string;
  readonly host: string;
  readonly port: string;
  readonly pathname: string;
}

/** UTF-8 only, as in both runtimes. */
declare class TextEncoder {
  encode(input?: string): Uint8Array<ArrayBuffer>;
}

declare class TextDecoder {
  constructor(label?: 'utf-8', options?: { fatal?: boolean });
  decode(input?: ArrayBuffer | ArrayBufferView): string;
}
