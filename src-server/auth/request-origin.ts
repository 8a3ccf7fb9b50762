import { AsyncLocalStorage } from 'node:async_hooks';

/** Where the request being served came from, for the audit log: the client's address as TRUST_PROXY reads it. */
export interface RequestOrigin {
  ip: string | null;
}

const origins = new AsyncLocalStorage<RequestOrigin>();

/** Runs `work` as the handling of a request from `origin`: what it records in the audit log says where from. */
export function withRequestOrigin<T>(origin: RequestOrigin, work: () => T): T {
  return origins.run(origin, work);
}

/** The origin of the request being served; null outside one (a schedule, a worker). */
export function requestOrigin(): RequestOrigin | null {
  return origins.getStore() ?? null;
}
