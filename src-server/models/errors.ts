import { shownAddress } from './runtime-address';

/** Named for the texts a failed run shows, `${name}: ${message}` (docs/run-lifecycle.md#timeouts-and-orphans). */
export class ConnectionRefusedError extends Error {
  override name = 'ConnectionRefusedError';
}

/** The parts of a local call that are never cut (system instructions, the run's message) are over the budget. */
export class ContextBudgetError extends Error {
  override name = 'ContextBudgetError';
}

/** A phase with tools runs on a model that cannot call them: the message names the model. */
export class ToolsUnsupportedError extends Error {
  override name = 'ToolsUnsupportedError';
}

/** A cloud model called a tool with arguments that are not a JSON object: the message names the provider and tool. */
export class MalformedToolCallError extends Error {
  override name = 'MalformedToolCallError';
}

export class ProviderNotConfiguredError extends Error {
  override name = 'ProviderNotConfiguredError';
}

export function causeCode(error: unknown): string | undefined {
  for (let current = error; current; current = (current as { cause?: unknown }).cause) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    if (current instanceof AggregateError) return causeCode(current.errors[0]);
  }
  return undefined;
}

/**
 * A refused connection says which runtime was not there, at its address without credentials (or without the
 * address, for answers that must not show one); anything else keeps the provider's own words.
 */
export function describeConnectionError(error: unknown, what: string, address?: string): unknown {
  if (causeCode(error) === 'ECONNREFUSED') {
    const where = address === undefined ? '' : ` at ${shownAddress(address)}`;
    return new ConnectionRefusedError(`cannot reach ${what}${where} (connection refused): is it running?`);
  }
  return error;
}
