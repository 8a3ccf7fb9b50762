import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/**
 * Every answer a test receives from a server under test is checked against the OpenAPI document that server serves:
 * its status must be declared for the operation, its media type among those declared for that status (a redirect's
 * too, which must also carry a Location it declares), and a JSON body must validate against the declared schema
 * (OpenAPI 3.1 schemas are JSON Schema 2020-12). A drift rejects the test's fetch with a ContractError, so
 * `npm test` fails where the server and its document disagree.
 *
 * The check wraps the global fetch once, and applies only to the origins of the servers the fixtures start
 * (startTestServer, spawnServer), which register themselves here. Answers outside the API (the studio, the docs
 * page, an unknown route's 404) have no operation and are not checked. Event streams are checked for status and
 * media type here, and frame by frame by test/helpers/sse.ts (checkRunEvent).
 */
export class ContractError extends Error {
  override name = 'ContractError';
}

interface Operation {
  id: string;
  method: string;
  pattern: RegExp;
  /** How specific the path is (literal segments): `/runs/x` matches `/runs/{id}` before `/{a}/{b}`. */
  literals: number;
  responses: Record<string, { content?: Record<string, { schema?: unknown }>; headers?: Record<string, unknown> }>;
  pointer: string;
  /** Where the JSON request body's schema is, when the operation takes one. */
  requestPointer?: string;
}

interface Contract {
  operations: Operation[];
  ajv: Ajv2020;
  /** The document as it is, for requests: keys a schema does not name are allowed (and ignored) in a request. */
  requestAjv: Ajv2020;
  validators: Map<string, ValidateFunction>;
}

const DOCUMENT_ID = 'https://contract.test/openapi.json';
const servers = new Map<string, Promise<Contract>>();
/** The contracts loaded so far, for the checks that cannot wait (an SSE frame as it is read). */
const loaded = new Map<string, Contract>();
const realFetch = globalThis.fetch;
let installed = false;

const escapePointer = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * An answer may not carry a field its schema does not name: every object schema with `properties` and no
 * `additionalProperties` of its own is closed for the check (the document leaves them open, as clients must ignore
 * unknown fields; the server must not send fields it does not document).
 */
function closeObjects(node: unknown): unknown {
  if (Array.isArray(node)) node.forEach(closeObjects);
  else if (node && typeof node === 'object') {
    const schema = node as Record<string, unknown>;
    if (schema.type === 'object' && schema.properties && !('additionalProperties' in schema)) {
      schema.additionalProperties = false;
    }
    Object.values(schema).forEach(closeObjects);
  }
  return node;
}

async function loadContract(origin: string): Promise<Contract> {
  const res = await realFetch(`${origin}/openapi.json`);
  if (!res.ok) throw new ContractError(`${origin}/openapi.json answered ${res.status}`);
  const doc = (await res.json()) as { paths: Record<string, Record<string, Operation['responses'] & object>> };
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema({ ...(closeObjects(structuredClone(doc)) as object), $id: DOCUMENT_ID });
  const requestAjv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(requestAjv);
  requestAjv.addSchema({ ...doc, $id: DOCUMENT_ID });
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods) as [
      string,
      { operationId: string; responses: never; requestBody?: unknown },
    ][]) {
      const segments = path.split('/').slice(1);
      const pattern = new RegExp(
        `^/${segments.map((s) => (/^\{\w+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))).join('/')}$`,
      );
      operations.push({
        id: op.operationId,
        method: method.toUpperCase(),
        pattern,
        literals: segments.filter((s) => !s.startsWith('{')).length,
        responses: op.responses,
        pointer: `#/paths/${escapePointer(path)}/${method}/responses`,
        // A form's fields are checked by the server alone: the check reads JSON bodies.
        requestPointer: (op.requestBody as { content?: Record<string, unknown> } | undefined)?.content?.[
          'application/json'
        ]
          ? `#/paths/${escapePointer(path)}/${method}/requestBody/content/application~1json/schema`
          : undefined,
      });
    }
  }
  operations.sort((a, b) => b.literals - a.literals);
  const contract = { operations, ajv, requestAjv, validators: new Map() };
  loaded.set(origin, contract);
  return contract;
}

/** Start checking the answers of the server at `origin` (http://127.0.0.1:port); stop() when it is gone. */
export function registerServer(origin: string): { stop(): void } {
  install();
  const key = new URL(origin).origin;
  // Read at once, while the server is surely up: a test may stop it right after its first answer.
  const contract = loadContract(key);
  contract.catch(() => undefined);
  servers.set(key, contract);
  return {
    stop: () => {
      servers.delete(key);
      loaded.delete(key);
    },
  };
}

const contractOf = (origin: string): Promise<Contract> | undefined => servers.get(origin);

function validator(contract: Contract, pointer: string, forRequest = false): ValidateFunction {
  const key = `${forRequest ? 'request' : 'answer'}${pointer}`;
  let validate = contract.validators.get(key);
  if (!validate) {
    validate = (forRequest ? contract.requestAjv : contract.ajv).getSchema(`${DOCUMENT_ID}${pointer}`);
    if (!validate) throw new ContractError(`no schema at ${pointer}`);
    contract.validators.set(key, validate);
  }
  return validate;
}

/**
 * The other half of the contract: a JSON body the server took (2xx) must be one the document allows. (The converse
 * is not checked here: services refuse bodies the schema allows for rules it cannot say, such as a routing target
 * outside the graph, with the same 400 `invalid request body: …`.)
 */
function checkRequest(contract: Contract, op: Operation, where: string, sent: string, res: Response): void {
  if (!op.requestPointer || res.status >= 300) return;
  let body: unknown;
  try {
    body = JSON.parse(sent);
  } catch {
    return;
  }
  const validate = validator(contract, op.requestPointer, true);
  if (!validate(body)) {
    throw new ContractError(`${where} took a body the document refuses (${describe(validate)}): ${sent.slice(0, 300)}`);
  }
}

const describe = (validate: ValidateFunction) =>
  (validate.errors ?? [])
    .slice(0, 5)
    .map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`)
    .join('; ');

/** An event stream may stay open: its body is never read here. */
const isStream = (res: Response) => (res.headers.get('content-type') ?? '').startsWith('text/event-stream');

/** Checks one answer (and the JSON body that was sent); throws a ContractError where it differs from the document. */
async function check(method: string, url: URL, res: Response, sent?: string): Promise<void> {
  const pending = contractOf(url.origin);
  if (!pending || method === 'OPTIONS' || method === 'HEAD') return;
  const contract = await pending;
  const { operations } = contract;
  const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : url.pathname;
  const op = operations.find((o) => o.method === method && o.pattern.test(path));
  if (!op) return;
  const where = `${method} ${url.pathname} (${op.id})`;
  const declared = op.responses[String(res.status)];
  if (!declared) {
    const body = isStream(res) ? '(an event stream)' : await res.clone().text();
    throw new ContractError(
      `${where} answered ${res.status}, which the document does not declare (it declares ${Object.keys(op.responses).join(', ')}): ${body.slice(0, 300)}`,
    );
  }
  if (sent !== undefined) checkRequest(contract, op, where, sent, res);
  if (res.status >= 300 && res.status < 400 && 'Location' in (declared.headers ?? {}) && !res.headers.get('location')) {
    throw new ContractError(`${where} ${res.status} declares a Location header but sent none`);
  }
  const mediaType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  const content = declared.content ?? {};
  if (Object.keys(content).length === 0) {
    const text = isStream(res) ? '(an event stream)' : await res.clone().text();
    if (text.length > 0)
      throw new ContractError(`${where} ${res.status} declares no body but sent ${text.slice(0, 200)}`);
    return;
  }
  if (!(mediaType in content)) {
    throw new ContractError(
      `${where} ${res.status} sent ${mediaType || 'no content type'}, the document declares ${Object.keys(content).join(', ')}`,
    );
  }
  if (mediaType !== 'application/json') return;
  const text = await res.clone().text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ContractError(`${where} ${res.status} sent a body that is not JSON: ${text.slice(0, 200)}`);
  }
  const validate = validator(contract, `${op.pointer}/${res.status}/content/application~1json/schema`);
  if (!validate(body)) {
    throw new ContractError(
      `${where} ${res.status} body does not match the document: ${describe(validate)}; body: ${text.slice(0, 300)}`,
    );
  }
}

/**
 * A run event's data (one SSE frame) checked against the RunEvent schema of the document served where the stream
 * came from (`url`, the response's). Its answer went through the fetch check, which loaded that document.
 */
export function checkRunEvent(url: string, data: unknown): void {
  const contract = url ? loaded.get(new URL(url).origin) : undefined;
  if (!contract) return;
  const validate = validator(contract, '#/components/schemas/RunEvent');
  if (!validate(data)) {
    throw new ContractError(
      `an event of ${new URL(url).pathname} does not match RunEvent: ${describe(validate)}; data: ${JSON.stringify(data).slice(0, 300)}`,
    );
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await realFetch(input, init);
    const requested = new URL(input instanceof Request ? input.url : input);
    if (!servers.has(requested.origin)) return res;
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    // A followed redirect is checked where it ended, as the GET it became.
    const sent = typeof init?.body === 'string' && !res.redirected ? init.body : undefined;
    await check(res.redirected ? 'GET' : method, res.redirected ? new URL(res.url) : requested, res, sent);
    return res;
  };
}
