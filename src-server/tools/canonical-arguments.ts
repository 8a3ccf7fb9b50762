import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** A tool call's arguments as an approval binds them: RFC 8785 canonical JSON and its SHA-256 (hex). */
export interface CanonicalArguments {
  canonical: string;
  sha256: string;
}

/**
 * One text for one set of arguments, however a provider spelled them (Ollama sends an object, the cloud providers a
 * JSON string, keys in any order): what a person approves is what runs, checked by hash.
 */
export function canonicalArguments(args: Record<string, unknown>): CanonicalArguments {
  const canonical = canonicalize(args) ?? '{}';
  return { canonical, sha256: sha256Hex(canonical) };
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
