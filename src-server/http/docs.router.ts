import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type Router } from 'express';
import { TOKEN_STORAGE_KEY } from '../contracts/storage';
import { inlineHash, pagePolicy } from './security-headers';

const require = createRequire(import.meta.url);
const swaggerDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/**
 * Swagger UI reads the token the studio keeps, so "Try it out" works right after signing in. No validator badge:
 * it would load an image from the validator's site.
 */
const INIT = `
    const ui = SwaggerUIBundle({
      url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, persistAuthorization: true, validatorUrl: null,
    });
    const token = localStorage.getItem(${JSON.stringify(TOKEN_STORAGE_KEY)});
    if (token) ui.preauthorizeApiKey('bearer', token);
  `;

const docsPage = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>API docs · Agent workflow service</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>${INIT}</script>
</body>
</html>`;

/** Swagger UI's own files, its one inline start-up script by hash, its data: icons, and calls to this server. */
const policy = pagePolicy({
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'", inlineHash(INIT)],
  imgSrc: ["'self'", 'data:'],
  connectSrc: ["'self'"],
});

export function docsRouter(openApiDocument: () => object): Router {
  const router = express.Router();
  let cached: object | undefined;
  router.get('/openapi.json', (_req, res) => {
    cached ??= openApiDocument();
    res.json(cached);
  });
  router.get('/docs', policy, (_req, res) => {
    res.type('html').send(docsPage);
  });
  router.use('/docs/assets', express.static(swaggerDir, { index: false, maxAge: '1d' }));
  return router;
}
