import fs from 'node:fs';
import path from 'node:path';
import express, { type Router } from 'express';
import { notFound } from '../contracts/errors';
import { pagePolicy } from './security-headers';

export const DEFAULT_STUDIO_DIR = path.resolve(import.meta.dirname, '..', '..', 'out', 'renderer');

/**
 * The built studio at /ui: hashed assets are cached for a year, index.html never, and client
 * routes (/ui/threads/…) get index.html so a reload lands in the app.
 */
/**
 * The built studio has no inline script or style: everything comes from its own files, and it talks to this server
 * only (images: its icon is a data: URL).
 */
const policy = pagePolicy({
  defaultSrc: ["'self'"],
  imgSrc: ["'self'", 'data:'],
  formAction: ["'self'"],
});

export function studioRouter(studioDir = DEFAULT_STUDIO_DIR): Router {
  const router = express.Router();
  router.use('/ui', policy);
  const indexFile = path.join(studioDir, 'index.html');
  router.use(
    '/ui/assets',
    express.static(path.join(studioDir, 'assets'), { immutable: true, maxAge: '365d', index: false }),
  );
  // A missing asset is a 404 like any unknown route, never index.html: a script tag must not get a page.
  router.use('/ui/assets', (req, _res, next) => next(notFound(`no studio file ${req.baseUrl}${req.path}`)));
  router.use('/ui', express.static(studioDir, { index: false, maxAge: 0 }));
  router.get(['/ui', '/ui/{*rest}'], (_req, res) => {
    if (!fs.existsSync(indexFile)) {
      res.status(503).type('text').send('The studio is not built: run npm run build:ui');
      return;
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(indexFile);
  });
  return router;
}
