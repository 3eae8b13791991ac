import type { z } from 'zod';
import { coreMethods, coreStreams } from './core';
import { controlNodeMethods } from './control-node';
import { doctorMethods } from './doctor';
import { pamMethods } from './pam';
import { notifyMethods, notifyStreams } from './notify';
import { povMethods, povStreams } from './pov';
import { reconcileMethods } from './reconcile';
import { shareMethods } from './share';
import { skytapMethods } from './skytap';
import { sshMethods, sshStreams } from './ssh';
import { bakeMethods } from './bake';
import { labTemplatesMethods } from './lab-templates';
import { vmMethods, vmStreams } from './vm';
import { joinLazy, type MethodDef, type StreamDef } from './define';

export * from './errors';
export * from './wire-schema';
export * from './define';
export * from './core';
export * from './job-kinds';

/**
 * Every call between UI and core. Each domain keeps its entries in its own file; this object is
 * the one place they meet. Transports (preload, IPC adapter, WebSocket host, CLI) derive from it.
 */
export const methods = joinLazy(
  coreMethods,
  skytapMethods,
  povMethods,
  reconcileMethods,
  controlNodeMethods,
  pamMethods,
  vmMethods,
  sshMethods,
  shareMethods,
  notifyMethods,
  bakeMethods,
  labTemplatesMethods,
  doctorMethods,
) satisfies Record<string, MethodDef>;

export const streams = {
  ...coreStreams,
  ...povStreams,
  ...vmStreams,
  ...sshStreams,
  ...notifyStreams,
} as const satisfies Record<string, StreamDef>;

export type Methods = typeof methods;
export type MethodName = keyof Methods;
export type Args<M extends MethodName> = z.input<Methods[M]['args']>;
export type ParsedArgs<M extends MethodName> = z.output<Methods[M]['args']>;
export type Result<M extends MethodName> = z.output<Methods[M]['result']>;

export type Streams = typeof streams;
export type StreamName = keyof Streams;
export type StreamData<S extends StreamName> = z.output<Streams[S]['data']>;

export function isMethodName(name: unknown): name is MethodName {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(methods, name);
}
export function isStreamName(name: unknown): name is StreamName {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(streams, name);
}
