import { z } from 'zod';
import { AssetSummarySchema, type AssetKind, type AssetSummary, type Manifest } from '../contracts/assets';
import type { Api } from './api';
import type { AppDeps } from './app';

function summary(manifest: Manifest): AssetSummary {
  return {
    name: manifest.name,
    description: manifest.description,
    kind: manifest.kind,
    category: manifest.category,
    phases: manifest.phases.map(({ id, name, kind }) => ({ id, name, kind })),
  };
}

export function assetRoutes(api: Api, deps: AppDeps): void {
  const list = (kind: AssetKind, path: string, summaryText: string) =>
    api.route({
      method: 'get',
      path,
      tag: 'assets',
      summary: summaryText,
      responses: { 200: { description: `every ${kind}`, schema: z.array(AssetSummarySchema) } },
      handler: () => deps.catalog.list(kind).map(summary),
    });
  list('agent', '/agents', 'List all agents');
  list('command', '/commands', 'List all commands');
}
