/**
 * Writes the OpenAPI document the server serves at /openapi.json to a file, built from the same route declarations
 * without starting a server or reaching a database: `tsx build/openapi.ts <file>`. `npm run lint:openapi` lints it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openApiDocument } from '../src-server/http/app';

const target = process.argv[2];
if (!target) {
  console.error('usage: tsx build/openapi.ts <file>');
  process.exit(2);
}
const pkg = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
  version: string;
};
fs.mkdirSync(path.dirname(path.resolve(target)), { recursive: true });
fs.writeFileSync(target, `${JSON.stringify(openApiDocument(pkg.version), null, 2)}\n`);
console.log(`wrote ${target}`);
